"""clusters/moc and clusters/local-podman pass `bench validate`'s checks."""

from __future__ import annotations

import pytest

from bench.commands.validation import check_env
from bench.environments.load import load_env


@pytest.mark.parametrize("name, kind", [("moc", "openshift"), ("local-podman", "container")])
def test_env_folder_is_valid(name, kind):
    if kind == "openshift":
        pytest.importorskip("kubernetes_validate")
    assert check_env(name) == []
    env = load_env(name)
    assert env.kind == kind


def test_local_podman_is_a_local_env_and_moc_is_not():
    assert load_env("local-podman").get("local") is True
    assert not load_env("moc").get("local")
    assert load_env("moc").get("cost")["model"] == "cloud"
