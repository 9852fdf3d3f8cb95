"""Killed, preempted and resumed runs end with exactly the weights of an uninterrupted run."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.workflows.biggan.conftest import events, last, run_workload, start_workload, wait_for_event

pytestmark = pytest.mark.slow  # each test trains and kills the smoke job in a subprocess

JOB = ("train.max_iters=30", "train.checkpoint_every=3", "train.log_every=1", "train.sample_grid=false")


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict:
    run_dir = tmp_path_factory.mktemp("uninterrupted")
    proc = run_workload(run_dir, *JOB)
    assert proc.returncode == 0, proc.stderr
    stop = events(run_dir)[-1]
    assert stop["event"] == "run_stop" and stop["iteration"] == 30
    return stop


def test_resume_after_sigkill_matches_uninterrupted(tmp_path: Path, uninterrupted: dict) -> None:
    run_dir = tmp_path / "run"
    proc = start_workload(run_dir, *JOB)
    first = wait_for_event(run_dir, "checkpoint", proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    killed = events(run_dir)
    assert "run_stop" not in [e["event"] for e in killed]  # a hard kill writes nothing more
    saved = max(e["iteration"] for e in killed if e["event"] == "checkpoint")
    assert saved >= first["iteration"]

    resumed = run_workload(run_dir, *JOB)
    assert resumed.returncode == 0, resumed.stderr
    evts = events(run_dir)
    start = last(evts, "run_start")
    assert start["iteration"] == saved and start["resumed_from"] == f"ckpt-{saved:08d}.pt"
    stop = evts[-1]
    assert stop["status"] == "success" and stop["iteration"] == 30
    assert stop["g_sha256"] == uninterrupted["g_sha256"]
    assert stop["images_seen"] == uninterrupted["images_seen"]


def test_sigterm_checkpoints_exits_75_and_resumes_exactly(tmp_path: Path, uninterrupted: dict) -> None:
    run_dir = tmp_path / "run"
    proc = start_workload(run_dir, *JOB)
    wait_for_event(run_dir, "checkpoint", proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 75, err
    assert "resume" in err
    evts = events(run_dir)
    stop = evts[-1]
    assert stop["event"] == "run_stop" and stop["status"] == "preempted"
    assert 3 <= stop["iteration"] < 30
    # no iteration lost: the checkpoint holds the last finished iteration, which was logged
    assert last(evts, "checkpoint")["iteration"] == stop["iteration"]
    assert last(evts, "train")["iteration"] == stop["iteration"]
    assert (run_dir / "checkpoints" / f"ckpt-{stop['iteration']:08d}.pt").is_file()

    resumed = run_workload(run_dir, *JOB)
    assert resumed.returncode == 0, resumed.stderr
    evts = events(run_dir)
    assert last(evts, "run_start")["iteration"] == stop["iteration"]
    final = evts[-1]
    assert final["status"] == "success" and final["g_sha256"] == uninterrupted["g_sha256"]
    # every iteration was trained exactly once across the two segments
    iters = [e["iteration"] for e in evts if e["event"] == "train"]
    assert iters == list(range(1, 31))


def test_sigusr1_is_a_preemption_too(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc = start_workload(run_dir, *JOB)
    wait_for_event(run_dir, "train", proc)
    proc.send_signal(signal.SIGUSR1)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 75, err
    stop = events(run_dir)[-1]
    assert stop["status"] == "preempted"
    assert last(events(run_dir), "checkpoint")["iteration"] == stop["iteration"]
