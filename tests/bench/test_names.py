"""Hostile names (env, experiment, run id, label) are refused before anything runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.environments.load import load_env
from bench.errors import ConfigError
from bench.gitops.hooks import HookSettings
from bench.gitops.pr import envs_from_labels
from bench.names import check_name
from bench.targets.base import JobSpec

REPO = Path(__file__).resolve().parents[2]
HOSTILE = ["../clusters/local", "..", "a/b", "x; touch pwned", '"$(touch pwned)"', "-rf", "", "a" * 64, "é"]


@pytest.mark.parametrize("name", HOSTILE)
def test_every_entry_point_refuses_a_hostile_name(name: str) -> None:
    with pytest.raises(ConfigError, match="is not a valid name"):
        check_name(name, "environment")
    with pytest.raises(ConfigError, match="is not a valid name"):
        load_env(name)
    with pytest.raises(ConfigError, match="is not a valid name"):
        JobSpec(run_id="r1", experiment=name, commit="abc")
    with pytest.raises(ConfigError, match="is not a valid name"):
        JobSpec(run_id=name, experiment="smoke", commit="abc")
    with pytest.raises(ConfigError, match="is not a valid name"):
        HookSettings(envs=("local",), experiment=name)
    with pytest.raises(ConfigError, match="is not a valid name"):
        HookSettings(envs=(name,))
    if name.strip():
        with pytest.raises(ConfigError, match="is not a valid name"):
            envs_from_labels(json.dumps([f"bench:{name}"]))


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--env", "../clusters/local", "--experiment", "smoke"],
        ["run", "--env", "local", "--experiment", "x; touch pwned"],
        ["demo", "--env", "../local"],
        ["collect", "--env", "local", "--run", "../../etc"],
        ["record", "--run-dir", "r", "--env", "$(id)", "--", "true"],
    ],
)
def test_cli_refuses_before_anything_runs(tmp_path: Path, argv: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "bench", *argv],
        cwd=tmp_path,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "ATLAS_RUNS_DIR": str(tmp_path / "runs")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert "is not a valid name" in proc.stderr and "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == []  # nothing created: no results, no runs, no pwned


def test_valid_names_pass() -> None:
    for name in ("local", "local-podman", "moc", "smoke", "imagenet128-deep", "20261122t030000-01234567-abcd"):
        assert check_name(name) == name


def test_hook_script_quotes_its_words(tmp_path: Path) -> None:
    from bench.gitops.hooks import hook_script

    script = hook_script(tmp_path, HookSettings(envs=("local", "local-podman"), experiment="smoke"))
    assert "echo 'atlas: running smoke on local, local-podman for' \"$new" in script
