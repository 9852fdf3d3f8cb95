"""Two gloo processes under torchrun: one log, one set of checkpoints, identical replicas."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.workflows.biggan.conftest import REPO, env, events

pytestmark = pytest.mark.slow  # torchrun with several processes


def test_two_process_gloo_run(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "2",
        "-m",
        "workflows.biggan",
        "--experiment",
        "smoke",
        "--run-dir",
        str(run_dir),
        "--set",
        "train.max_iters=6",
        "--set",
        "train.checkpoint_every=3",
        "--set",
        "train.log_every=3",
    ]
    proc = subprocess.run(cmd, cwd=REPO, env=env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    evts = events(run_dir)
    names = [e["event"] for e in evts]
    assert names.count("run_start") == 1 and names.count("run_stop") == 1  # rank 0 alone writes
    assert evts[0]["world_size"] == 2
    stop = evts[-1]
    assert stop["status"] == "success" and stop["iteration"] == 6
    assert stop["replicas_identical"] is True  # gradients were averaged across the two processes
    assert stop["images_seen"] == 6 * 2 * 8  # global batch 8 = 2 processes x 4
    # each bundle with its digest beside it (checked on load)
    kept = sorted(p.name for p in (run_dir / "checkpoints").iterdir())
    assert kept == ["ckpt-00000003.pt", "ckpt-00000003.pt.sha256", "ckpt-00000006.pt", "ckpt-00000006.pt.sha256"]


def test_sigterm_to_torchrun_checkpoints_on_every_rank_and_resumes(tmp_path: Path) -> None:
    """Slurm's scancel / a pod's termination signals the launcher; torchrun forwards it to the ranks."""
    import signal

    import pytest

    from tests.workflows.biggan.conftest import last, wait_for_event

    run_dir = tmp_path / "run"
    base = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "2",
        "-m",
        "workflows.biggan",
        "--experiment",
        "smoke",
        "--run-dir",
        str(run_dir),
        "--set",
        "train.checkpoint_every=3",
        "--set",
        "train.sample_grid=false",
    ]
    proc = subprocess.Popen(
        base + ["--set", "train.max_iters=500"],
        cwd=REPO,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for_event(run_dir, "checkpoint", proc, timeout=180)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0  # torchrun reports the signal itself; the log has the outcome
    stop = events(run_dir)[-1]
    if stop["event"] != "run_stop":
        pytest.fail(f"no run_stop after SIGTERM: {err[-2000:]}")
    assert stop["status"] == "preempted" and stop["replicas_identical"] is True
    assert last(events(run_dir), "checkpoint")["iteration"] == stop["iteration"] < 500

    target = stop["iteration"] + 2
    again = subprocess.run(
        base + ["--set", f"train.max_iters={target}"], cwd=REPO, env=env(), capture_output=True, text=True, timeout=300
    )
    assert again.returncode == 0, again.stderr[-3000:]
    evts = events(run_dir)
    assert last(evts, "run_start")["resumed_from"] == f"ckpt-{stop['iteration']:08d}.pt"
    assert evts[-1]["status"] == "success" and evts[-1]["iteration"] == target
