"""The target registry (bench/targets/__init__.py): one class per kind, unknown kinds named."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench import targets
from bench.errors import ConfigError
from bench.targets import known_kinds, register, target_class
from bench.targets.base import Target


def kinds_declared() -> dict[str, str]:
    """kind -> module, for the modules of bench/targets/ that declare one (`@register("...")`),
    read from their text."""
    folder = Path(targets.__file__).parent
    found = {}
    for path in folder.glob("*.py"):
        for kind in re.findall(r'^@register\("([^"]+)"\)', path.read_text(), re.M):
            found[kind] = path.stem
    return found


def test_every_kind_resolves_to_its_own_class():
    kinds, declared = known_kinds(), kinds_declared()
    assert kinds == sorted(declared) and "local" in kinds  # helper modules register none
    classes = {kind: target_class(kind) for kind in kinds}
    assert all(
        cls.kind == kind and cls.__module__ == f"bench.targets.{declared[kind]}" for kind, cls in classes.items()
    )
    # a kind's module is its name as a Python name (`ssh-demo` -> ssh_demo.py): found without the others
    assert all(declared[kind] == kind.replace("-", "_") for kind in kinds)


def test_a_duplicate_kind_is_refused():
    target_class("local")
    with pytest.raises(ConfigError, match=r"target kind 'local' is registered twice .*LocalTarget and .*Impostor"):

        @register("local")
        class Impostor(Target):
            pass

    assert target_class("local").__name__ == "LocalTarget"


def test_an_unknown_kind_lists_the_known_ones():
    with pytest.raises(
        ConfigError, match=re.escape(f"unknown target kind 'nomad' (known kinds: {', '.join(known_kinds())})")
    ):
        target_class("nomad")
    with pytest.raises(ConfigError, match="unknown target kind 'base'"):
        target_class("base")  # a helper module is not a kind
