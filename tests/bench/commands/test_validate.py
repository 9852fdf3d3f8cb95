"""`bench validate` says exactly which file and key is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.cli import main


def env(clusters: Path, name: str, text: str) -> None:
    (clusters / name).mkdir(parents=True, exist_ok=True)
    (clusters / name / "env.yaml").write_text(text)


def test_repository_envs_and_experiments_are_valid(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["validate", "local"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "ok   env local" in out and "ok   experiment smoke" in out


@pytest.mark.parametrize(
    "text, needle",
    [
        ("description: x\n", "missing required key 'kind'"),
        ("kind: warp\n", "kind: unknown target kind 'warp'"),
        ("kind: local\nlocal: yes please\n", "local must be true or false"),
        ("kind: local\nhardware: {cores_per_node: two}\n", "hardware.cores_per_node must be int"),
        (
            "kind: local\ncost: {model: onprem, pue: 1.2, node_capex_usd: 1}\n",
            "cost.electricity_usd_per_kwh is required",
        ),
        ("kind: local\ncost: {model: cloud}\n", "cost.usd_per_gpu_hour is required"),
        ("kind: local\n  bad: [\n", "not valid YAML"),
        ("- a list\n", "expected a mapping"),
    ],
)
def test_each_problem_names_file_and_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, needle: str
) -> None:
    env(tmp_path, "e", text)
    code = main(["validate", "--clusters", str(tmp_path), "--no-experiments"])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL env e" in out and needle in out
    assert str(tmp_path / "e" / "env.yaml") in out


def test_unknown_env_and_experiment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env(tmp_path, "ok", "kind: local\n")
    assert main(["validate", "--clusters", str(tmp_path), "nope", "--experiment", "no-such-preset"]) == 1
    out = capsys.readouterr().out
    assert "unknown environment 'nope'" in out and "known: ok" in out
    assert "experiment 'no-such-preset': unknown experiment" in out
