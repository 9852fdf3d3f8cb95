"""Target registry: `clusters/<env>/env.yaml` names a `kind`, the kind names a class.

Each kind lives in its own module (local, container, slurm, kubernetes, openshift) and registers
itself with `@register`. Modules are imported lazily so that, say, the OpenShift
client library is only needed by people who use OpenShift.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TypeVar

from bench.envs import Environment, load_env
from bench.errors import ConfigError
from bench.targets.base import JobSpec, RunState, RunStatus, Target

__all__ = ["JobSpec", "RunState", "RunStatus", "Target", "register", "target_for", "KINDS"]

# kind -> module that defines it
KINDS: dict[str, str] = {
    "local": "bench.targets.local",
    "slurm": "bench.targets.slurm",
    "kubernetes": "bench.targets.kubernetes",
    "openshift": "bench.targets.openshift",
    "container": "bench.targets.container",
}

_REGISTRY: dict[str, type[Target]] = {}
T = TypeVar("T", bound=type[Target])


def register(kind: str) -> Callable[[T], T]:
    """Class decorator: `@register("slurm")`. A second class for one kind is refused."""

    def deco(cls: T) -> T:
        if kind in _REGISTRY and _REGISTRY[kind] is not cls:
            raise ConfigError(
                f"target kind {kind!r} is registered twice ({_REGISTRY[kind].__module__}.{_REGISTRY[kind].__name__} "
                f"and {cls.__module__}.{cls.__name__}): give the new kind its own name"
            )
        cls.kind = kind
        _REGISTRY[kind] = cls
        return cls

    return deco


def target_class(kind: str) -> type[Target]:
    if kind not in KINDS:
        raise ConfigError(f"unknown target kind {kind!r} (known kinds: {', '.join(sorted(KINDS))})")
    if kind not in _REGISTRY:
        try:
            importlib.import_module(KINDS[kind])
        except ModuleNotFoundError as exc:
            raise ConfigError(
                f"target kind {kind!r} needs the Python module {exc.name!r}: "
                f"install it with `make setup` (or pip install '.[{kind}]')"
            ) from exc
    if kind not in _REGISTRY:
        raise ConfigError(f"target kind {kind!r} is not implemented yet ({KINDS[kind]} registers nothing)")
    return _REGISTRY[kind]


def target_for(env: str | Environment) -> Target:
    environment = load_env(env) if isinstance(env, str) else env
    return target_class(environment.kind)(environment)
