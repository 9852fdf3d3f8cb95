"""The target registry (bench/targets/__init__.py): one class per kind, unknown kinds named."""

from __future__ import annotations

import pytest

from bench.errors import ConfigError
from bench.targets import known_kinds, register, target_class
from bench.targets.base import Target


def test_every_kind_resolves_to_its_own_class():
    kinds = known_kinds()
    assert kinds == ["container", "kubernetes", "local", "openshift", "slurm"]  # helper modules register none
    classes = {kind: target_class(kind) for kind in kinds}
    assert all(cls.kind == kind and cls.__module__ == f"bench.targets.{kind}" for kind, cls in classes.items())


def test_a_duplicate_kind_is_refused():
    target_class("local")
    with pytest.raises(ConfigError, match=r"target kind 'local' is registered twice .*LocalTarget and .*Impostor"):

        @register("local")
        class Impostor(Target):
            pass

    assert target_class("local").__name__ == "LocalTarget"


def test_an_unknown_kind_lists_the_known_ones():
    with pytest.raises(ConfigError, match=r"unknown target kind 'nomad' \(known kinds: container, kubernetes, local"):
        target_class("nomad")
    with pytest.raises(ConfigError, match="unknown target kind 'base'"):
        target_class("base")  # a helper module is not a kind
