"""bench/environments/load.py: an environment is a folder with env.yaml; mistakes name the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.environments.load import known_envs, load_env
from bench.errors import ConfigError


def test_folders_with_env_yaml_are_environments_and_shared_folders_are_not(tmp_path: Path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "env.yaml").write_text("kind: local\n")
    (tmp_path / "_bases" / "openshift").mkdir(parents=True)
    assert known_envs(tmp_path) == ["a"]
    env = load_env("a", tmp_path)
    assert env.kind == "local" and env.folder == tmp_path / "a" and env.get("missing", 3) == 3


@pytest.mark.parametrize(
    "text, message",
    [
        ("kind: [\n", "not valid YAML"),
        ("- a\n", "expected a mapping"),
        ("description: x\n", "missing required key 'kind'"),
    ],
)
def test_bad_env_yaml_is_named(tmp_path: Path, text: str, message: str):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "env.yaml").write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_env("b", tmp_path)
    with pytest.raises(ConfigError, match=r"unknown environment 'zz'.*known: b"):
        load_env("zz", tmp_path)
