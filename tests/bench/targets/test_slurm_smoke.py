"""End to end on the real local Slurm with the real workload: `bench run --env local-slurm
--experiment smoke`, and the same run interrupted by the time-limit warning signal, which
checkpoints, resumes in a dependent job and ends with the same generator weights."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.analysis.run_index import INDEX_FILE
from bench.environments.load import load_env
from bench.records.timeline import timeline_problems
from bench.targets.base import JobSpec, RunState, new_run_id
from bench.targets.lifecycle import collect_run
from bench.targets.slurm import SlurmTarget
from tests.ansible.local_slurm import REPO, RUNS, head, local_slurm, slurm_env, wait_finished  # noqa: F401

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


def events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture(scope="module")
def smoke_run(local_slurm, tmp_path_factory) -> Path:
    """The CLI's own `bench run` of the smoke experiment at this repository's HEAD."""
    results = tmp_path_factory.mktemp("results")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "run",
            "--env",
            "local-slurm",
            "--experiment",
            "smoke",
            "--results",
            str(results),
            "--timeout",
            "400",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=480,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run_dir,) = (p for p in (results / "local-slurm").iterdir() if p.name != INDEX_FILE)
    return run_dir


def test_bench_run_local_slurm_smoke_end_to_end(smoke_run: Path) -> None:
    record = json.loads((smoke_run / "run.json").read_text())
    assert record["exit"]["code"] == 0 and record["experiment"] == "smoke"
    assert record["git"] == {"sha": head(REPO), "dirty": False}
    sched = record["scheduler"]
    assert sched["kind"] == "slurm" and sched["state"] == "COMPLETED" and sched["job_id"].isdigit()
    assert sched["submit_time"] <= sched["start_time"] <= sched["end_time"] and sched["queue_wait_s"] >= 0
    stop = [e for e in events(smoke_run / "train.jsonl") if e["event"] == "run_stop"][-1]
    assert stop["status"] == "success" and len(stop["g_sha256"]) == 64
    assert list(smoke_run.glob("samples-*.csv"))
    assert_slurm_timeline(record["timeline"], sched)


def assert_slurm_timeline(timeline: dict, sched: dict) -> None:
    """deliver from bench's submit to Slurm's Submit, queue Submit -> Start on slurmctld's
    whole-second clock (sacct), launch from Start to the job's own clock; the sbatch task's
    ansible-runner event is kept; the known phases add up to submitted -> collected."""
    by = {p["phase"]: p for p in timeline["phases"]}
    marks = timeline["marks"]
    assert marks["accepted"] == {"time": sched["submit_time"], "source": "slurmctld", "resolution_s": 1.0}
    assert marks["granted"]["time"] == sched["start_time"] and marks["sbatch_returned"]["source"] == "ansible-runner"
    assert by["queue"]["source"] == "slurmctld" and by["queue"]["seconds"] == sched["start_time"] - sched["submit_time"]
    assert by["deliver"]["source"] == "bench-host → slurmctld" and by["deliver"]["resolution_s"] == 1.0
    assert by["launch"]["source"] == "slurmctld → job" and by["launch"]["clocks_meet"] == ["slurmctld", "job"]
    for phase in ("warmup", "train", "finish", "collect"):
        assert by[phase]["seconds"] is not None and by[phase]["seconds"] >= 0, by[phase]
    assert by["stage"]["reason"].startswith("no staging step") and by["pull"]["reason"].startswith("no image pull")
    whole = marks["collected"]["time"] - marks["submitted"]["time"]
    total = sum(p["seconds"] for p in timeline["phases"] if p["seconds"] is not None)
    assert abs(total - whole) <= 1.0, (total, whole)
    assert timeline_problems(timeline) == []


def test_warning_signal_checkpoints_and_resume_matches_uninterrupted(smoke_run: Path, tmp_path: Path) -> None:
    target = SlurmTarget(load_env("local-slurm"))
    target.state_dir = tmp_path / "ledger"
    sha = head(REPO)
    job = JobSpec(run_id=new_run_id(sha), experiment="smoke", commit=sha)
    first = target.submit(job).scheduler_job_id
    log = RUNS / job.run_id / "train.jsonl"
    deadline = time.monotonic() + 300
    while not any(e["event"] == "train" for e in events(log)):  # some progress to checkpoint
        assert time.monotonic() < deadline, "the smoke run did not log a training step in 300 s"
        time.sleep(0.5)
    # Slurm's `--signal=B:USR1@N` warning, sent now instead of N seconds before the limit.
    subprocess.run(["scancel", "--signal=USR1", "--batch", str(first)], env=slurm_env(), check=True, timeout=30)
    final = wait_finished(target, job.run_id, 400, 2)
    assert final.state is RunState.COMPLETED, final.detail
    assert len(final.extra["job_ids"].split(",")) == 2
    stops = [e for e in events(log) if e["event"] == "run_stop"]
    assert [s["status"] for s in stops] == ["preempted", "success"]
    uninterrupted = [e for e in events(smoke_run / "train.jsonl") if e["event"] == "run_stop"][-1]
    assert stops[-1]["g_sha256"] == uninterrupted["g_sha256"]
    dest = collect_run(target, job.run_id, tmp_path / "resumed").path
    sched = json.loads((dest / "run.json").read_text())["scheduler"]
    assert sched["segments"] == 2 and sched["job_id"] == first
