"""`bench validate` refuses what sbatch or the API server would refuse later (issue 24):
each value one line naming the key, never a traceback, on copies of the repository's
own Slurm (local-slurm) and OpenShift (moc) env folders with one value changed."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.cli import main
from bench.environments.limits import time_limit_minutes
from bench.environments.load import CLUSTERS_DIR

NAN, INF = float("nan"), float("inf")


def changed_env(tmp_path: Path, source: str, path: str, value: Any) -> Path:
    clusters = tmp_path / "clusters"
    shutil.copytree(CLUSTERS_DIR / source, clusters / "e")
    for shared in ("_bases", "_schemas"):  # the kustomize bases and CRD schemas the env folders use
        if (CLUSTERS_DIR / shared).is_dir():
            shutil.copytree(CLUSTERS_DIR / shared, clusters / shared)
    data = yaml.safe_load((clusters / "e" / "env.yaml").read_text())
    *parents, key = path.split(".")
    node = data
    for name in parents:
        node = node.setdefault(name, {})
    node[key] = value
    (clusters / "e" / "env.yaml").write_text(yaml.safe_dump(data))
    return clusters


@pytest.mark.parametrize(
    "source, path, value, needle",
    [
        ("local-slurm", "slurm.time_limit", "00:30:00\n#SBATCH --uid=0", "slurm.time_limit"),
        ("local-slurm", "slurm.time_limit", "99999999999", "slurm.time_limit"),
        ("local-slurm", "slurm.time_limit", "-1", "slurm.time_limit"),
        ("local-slurm", "slurm.time_limit", "1000-00:00:00", "slurm.time_limit"),
        ("local-slurm", "slurm.cpus_per_task", 0, "slurm.cpus_per_task: must be an integer from 1"),
        ("local-slurm", "slurm.max_segments", 10**6, "slurm.max_segments: must be an integer from 1 to 1000"),
        ("local-slurm", "slurm.partition", "atlas\n#SBATCH --uid=0", "slurm.partition"),
        ("local-slurm", "slurm.mem", "lots", "slurm.mem"),
        ("local-slurm", "shape", {"nodes": 1, "gpus_per_node": 0, "cpus_per_gpu": 1e308}, "shape.cpus_per_gpu"),
        ("local", "shape", {"nodes": 1, "gpus_per_node": 0, "cpus_per_gpu": NAN}, "shape.cpus_per_gpu"),
        ("local", "shape", {"nodes": 1, "gpus_per_node": 0, "memory_gib_per_gpu": INF}, "shape.memory_gib_per_gpu"),
        ("moc", "shape.gpus_per_node", 1000000, "shape.gpus_per_node must be a number of GPUs"),
        ("moc", "shape.gpus_per_node", -1, "shape.gpus_per_node must be a number of GPUs"),
        ("moc", "shape.memory_gib_per_gpu", "lots", "shape.memory_gib_per_gpu"),
        ("moc", "shape.cpus_per_gpu", NAN, "shape.cpus_per_gpu"),
        ("moc", "shape.nodes", 10**6, "shape.nodes"),
    ],
)
def test_validate_refuses_what_the_scheduler_would(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str, path: str, value: Any, needle: str
) -> None:
    clusters = changed_env(tmp_path, source, path, value)
    code = main(["validate", "--clusters", str(clusters), "e", "--no-experiments"])
    out = capsys.readouterr().out
    assert code == 1 and "FAIL env e" in out and needle in out, out
    problems = [line for line in out.splitlines() if line.startswith("  ")]
    assert len(problems) == 1, out  # one line for one bad value
    if "gpus_per_node" in path:
        assert "memory" not in problems[0]


def test_the_repositorys_slurm_and_openshift_envs_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The control: the same copies unchanged pass, so the refusals above are the values'."""
    clusters = changed_env(tmp_path, "moc", "shape.gpus_per_node", 8)
    shutil.copytree(CLUSTERS_DIR / "local-slurm", clusters / "s")
    assert main(["validate", "--clusters", str(clusters), "--no-experiments"]) == 0, capsys.readouterr().out


@pytest.mark.parametrize(
    "value, minutes",
    [("30", 30), ("30:30", 30.5), ("01:00:00", 60), ("2-00", 2880), ("1-01:30", 1530), ("1-00:00:30", 1440.5)],
)
def test_sbatch_time_formats_pass(value: str, minutes: float) -> None:
    assert time_limit_minutes(value) == minutes


@pytest.mark.parametrize("value", ["", "0", "-1", "1:2:3:4", "30\n", " 30", "1e9", True, 1.5, None, "INFINITE"])
def test_sbatch_time_refusals(value: Any) -> None:
    assert time_limit_minutes(value) is None
