"""Environment folders are data: an `ansible_*` key (or any unknown key) in env.yaml is refused
by `bench validate` and by `bench run` before anything runs; only atlas_* variables reach Ansible."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bench.environments.load import CLUSTERS_DIR, Environment, load_env
from bench.environments.schema import settings_problems
from bench.errors import ConfigError
from bench.targets import target_class, target_for

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def repo_copy(tmp_path: Path) -> Path:
    """bench + workflows + clusters copied: clusters/evil holds a hostile env.yaml."""
    root = tmp_path / "repo"
    for part in ("bench", "workflows", "clusters"):
        shutil.copytree(REPO / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
    evil = root / "clusters" / "evil"
    shutil.copytree(root / "clusters" / "local-slurm", evil)
    data = yaml.safe_load((evil / "env.yaml").read_text())
    data["ansible_ssh_common_args"] = f"-o ProxyCommand='touch {tmp_path / 'pwned'}'"
    (evil / "env.yaml").write_text(yaml.safe_dump(data))
    return root


def bench(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-m", "bench", *argv], cwd=root, env=env, capture_output=True, text=True, timeout=120
    )


def test_validate_refuses_an_ansible_key(repo_copy: Path) -> None:
    proc = bench(repo_copy, "validate", "evil", "--no-experiments")
    assert proc.returncode == 1 and "FAIL env evil" in proc.stdout
    assert "'ansible_ssh_common_args' is refused: ansible_* variables may not come from env.yaml" in proc.stdout


def test_run_refuses_an_ansible_key_before_anything_runs(repo_copy: Path, tmp_path: Path) -> None:
    proc = bench(repo_copy, "run", "--env", "evil", "--experiment", "smoke", "--results", str(tmp_path / "results"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "ansible_ssh_common_args" in proc.stderr and "bench validate evil" in proc.stderr
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "results").exists()
    assert not (repo_copy / ".atlas").exists() and not (repo_copy / ".slurm").exists()


def test_run_runs_the_experiment_check_too(repo_copy: Path) -> None:
    (repo_copy / "workflows" / "biggan" / "experiments" / "broken.yaml").write_text("train: [not, a, mapping]\n")
    proc = bench(repo_copy, "run", "--env", "local", "--experiment", "broken")
    assert proc.returncode == 2 and "experiment 'broken'" in proc.stderr and "Traceback" not in proc.stderr


def test_every_target_refuses_unknown_and_ansible_keys() -> None:
    for name in ("local", "local-podman", "local-slurm", "satori", "moc"):
        env = load_env(name)
        assert settings_problems(env.settings, env.kind, target_class(env.kind).settings_properties) == []
        for extra in ({"ansible_become": True}, {"sudo": True}):
            hostile = Environment(env.name, env.kind, env.folder, {**env.settings, **extra})
            with pytest.raises(ConfigError, match="unknown key"):
                target_for(hostile)
    nested = {"kind": "slurm", "slurm": {"ansible_host": "x"}, "hardware": {"a": [{"ansible_x": 1}]}}
    problems = settings_problems(nested, "slurm", target_class("slurm").settings_properties)
    assert any(p.startswith("slurm: key 'ansible_host' is refused") for p in problems)
    assert any(p.startswith("hardware.a.0: key 'ansible_x' is refused") for p in problems)


def test_only_atlas_variables_reach_ansible() -> None:
    pytest.importorskip("ansible_runner")
    variables = target_for("satori").ansible_variables()
    assert all(k.startswith("atlas_") for k in variables)
    assert variables["atlas_env_slurm"]["partition"] == "sched_system_all"
    assert (
        variables["atlas_data_path"] == yaml.safe_load((CLUSTERS_DIR / "satori" / "env.yaml").read_text())["data_path"]
    )
