"""Target registry: `clusters/<env>/env.yaml` names a `kind`, the kind names a class.

Each kind lives in its own module named after it (`bench/targets/<kind>.py`: local,
container, slurm, kubernetes, openshift, trainjob) and registers itself with `@register("kind")`,
as ReFrame's scheduler back-ends do; a new kind is that one module and nothing else.
Modules are imported when their kind is asked for, and they import their client
libraries lazily, so the OpenShift client is only needed by people who use OpenShift.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import TypeVar

from bench.environments.load import Environment, load_env
from bench.errors import ConfigError
from bench.targets.base import JobSpec, RunState, RunStatus, Target

__all__ = ["JobSpec", "RunState", "RunStatus", "Target", "known_kinds", "register", "target_class", "target_for"]

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


def known_kinds() -> list[str]:
    """Every kind a module of this package registers (helper modules register none)."""
    for info in pkgutil.iter_modules(__path__):
        try:
            importlib.import_module(f"{__name__}.{info.name}")
        except ImportError:
            continue  # a kind whose module cannot load is named by target_class when asked for
    return sorted(_REGISTRY)


def target_class(kind: str) -> type[Target]:
    """The class of `kind`: from its module (`ssh-demo` -> ssh_demo.py), else from whichever
    module of this package registers it, so a kind's name need not be a Python name."""
    name = kind.replace("-", "_") if isinstance(kind, str) else ""
    if kind not in _REGISTRY and name.isidentifier():
        module = f"{__name__}.{name}"
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise ConfigError(
                    f"target kind {kind!r} needs the Python module {exc.name!r}: "
                    f"install it with `make setup` (or pip install '.[{kind}]')"
                ) from exc
    if kind not in _REGISTRY:
        known = known_kinds()  # imports every kind's module: one may register a kind under another name
        if kind not in _REGISTRY:
            raise ConfigError(f"unknown target kind {kind!r} (known kinds: {', '.join(known)})")
    return _REGISTRY[kind]


def target_for(env: str | Environment) -> Target:
    environment = load_env(env) if isinstance(env, str) else env
    return target_class(environment.kind)(environment)
