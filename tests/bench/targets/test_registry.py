"""The target registry (bench/targets/__init__.py): one class per kind, unknown kinds named."""

from __future__ import annotations

import pytest

from bench.errors import ConfigError
from bench.targets import KINDS, register, target_class
from bench.targets.base import Target


def test_every_kind_resolves_to_its_own_class():
    classes = {kind: target_class(kind) for kind in KINDS}
    assert all(cls.kind == kind for kind, cls in classes.items())
    assert len(set(classes.values())) == len(KINDS)


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
