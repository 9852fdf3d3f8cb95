"""The launcher for a shape: the exact command lines a job runs with 0, 1, N GPUs and N nodes."""

from __future__ import annotations

import pytest

from bench.targets.base import JobSpec
from bench.targets.launch import PYTORCHJOB_RENDEZVOUS, Rendezvous, recorded_launch

JOB = JobSpec(run_id="r1", experiment="cifar", commit="c" * 40, overrides=("train.max_iters=5",))
WORKLOAD = ["-m", "workflows.biggan", "--experiment", "cifar", "--run-dir", "/results/r1", "--set", "train.max_iters=5"]


def launch_command(job: JobSpec, run_dir: str, *shape: int, **kw: object) -> list[str]:
    """What the recorder runs: the job command's part after `bench record ... --`."""
    cmd = recorded_launch("moc", job, run_dir, *shape, **kw)
    return cmd[cmd.index("--") + 1 :]


@pytest.mark.parametrize("gpus", [0, 1])
def test_one_gpu_or_none_runs_the_workload_directly(gpus: int) -> None:
    assert launch_command(JOB, "/results/r1", 1, gpus) == ["python", *WORKLOAD]


@pytest.mark.parametrize("gpus", [2, 4, 8])
def test_n_gpus_on_one_node_is_torchrun_standalone_one_process_per_gpu(gpus: int) -> None:
    assert launch_command(JOB, "/results/r1", 1, gpus) == [
        "python", "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={gpus}", *WORKLOAD,
    ]  # fmt: skip


def test_n_nodes_meet_at_the_rendezvous() -> None:
    cmd = launch_command(JOB, "/results/r1", 3, 4, rendezvous=Rendezvous("2", "10.0.0.1", "23456"))
    assert cmd == [
        "python", "-m", "torch.distributed.run", "--nnodes=3", "--nproc-per-node=4", "--node-rank=2",
        "--master-addr=10.0.0.1", "--master-port=23456", *WORKLOAD,
    ]  # fmt: skip
    # In a PyTorchJob pod the kubelet expands these from the operator's environment.
    pj = launch_command(JOB, "/results/r1", 2, 4, rendezvous=PYTORCHJOB_RENDEZVOUS)
    assert "--node-rank=$(RANK)" in pj and "--master-addr=$(MASTER_ADDR)" in pj and "--master-port=$(MASTER_PORT)" in pj
    with pytest.raises(ValueError, match="needs a rendezvous"):
        launch_command(JOB, "/results/r1", 2, 4)
    with pytest.raises(ValueError, match="nodes >= 1"):
        launch_command(JOB, "/results/r1", 0, 4)


def test_the_recorder_wraps_the_launcher() -> None:
    cmd = recorded_launch("moc", JOB, "/results/r1", 1, 4)
    assert cmd[:9] == ["python", "-m", "bench", "record", "--run-dir", "/results/r1", "--env", "moc", "--"]
    assert cmd[9:13] == ["python", "-m", "torch.distributed.run", "--standalone"]


@pytest.mark.slow
def test_the_two_process_launch_really_trains_on_cpu(tmp_path) -> None:
    """The rendered torchrun line runs: two gloo processes on CPU, one record, shape in run.json."""
    import json
    import subprocess
    import sys

    pytest.importorskip("torch")
    job = JobSpec(run_id="r", experiment="smoke", commit="c" * 40, overrides=("train.max_iters=4",))
    cmd = recorded_launch("local", job, str(tmp_path), 1, 2, python=sys.executable)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["exit"]["status"] == "success"
    assert record["shape"]["processes_per_node"] == 2 and record["shape"]["nodes"] == 1
    start = json.loads((tmp_path / "train.jsonl").read_text().splitlines()[0])
    assert start["event"] == "run_start" and start["world_size"] == 2
