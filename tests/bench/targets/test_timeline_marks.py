"""The Slurm and podman kinds' timeline marks, from the Slurm ledger, Slurm's accounting facts,
ansible-runner's events and podman's times (no cluster needed: the end to end is test_slurm_smoke.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench.environments.load import CLUSTERS_DIR, load_env
from bench.records.timeline import build_timeline, phase_seconds
from bench.targets.slurm import SlurmTarget
from bench.targets.slurm_timeline import SBATCH_TASK, task_end_time


def test_the_sbatch_tasks_event_time_is_read_as_utc() -> None:
    events = [
        {"event": "runner_on_ok", "created": "2023-11-14T22:13:19", "event_data": {"task": "other"}},
        {"event": "runner_on_ok", "created": "2023-11-14T22:13:21", "event_data": {"task": SBATCH_TASK}},
    ]
    assert task_end_time(events, SBATCH_TASK) == 1700000001.0
    events[1]["event_data"]["end"] = "2023-11-14T22:13:20.500000"
    assert task_end_time(events, SBATCH_TASK) == 1700000000.5
    assert task_end_time(events[:1], SBATCH_TASK) is None


def test_marks_from_the_ledger_and_sacct(tmp_path: Path) -> None:
    target = SlurmTarget(load_env("local-slurm"))
    target.state_dir = tmp_path
    ledger = {"run_id": "r1", "submit_started_at": 1000.25, "sbatch_at": 1006.5, "pushed_at": 990.0}
    (tmp_path / "r1.json").write_text(json.dumps(ledger))
    marks = target.timeline_marks("r1", {"submit_time": 1006.0, "start_time": 1009.0})
    assert marks["submitted"] == {"time": 1000.25, "source": "bench-host", "resolution_s": 0.001}
    assert marks["accepted"] == {"time": 1006.0, "source": "slurmctld", "resolution_s": 1.0}
    assert marks["granted"]["time"] == 1009.0 and marks["sbatch_returned"]["source"] == "ansible-runner"
    assert marks["pushed"]["time"] == 990.0 and marks["staged"]["time"] is None
    got = phase_seconds(build_timeline(marks))
    assert got["deliver"] == 5.75 and got["queue"] == 3.0 and got["stage"] is None


def test_a_run_submitted_from_another_machine_has_no_submitted_mark_and_says_why(tmp_path: Path) -> None:
    target = SlurmTarget(load_env("local-slurm"))
    target.state_dir = tmp_path
    marks = target.timeline_marks("elsewhere", {"submit_time": 1006.0, "start_time": 1009.0})
    assert marks["submitted"]["time"] is None and "another one" in marks["submitted"]["reason"]
    timeline = build_timeline(marks)
    deliver = timeline["phases"][0]
    assert deliver["seconds"] is None and "no ledger entry for elsewhere" in deliver["reason"]


def test_podman_marks_come_from_the_facts_collection_kept(tmp_path: Path) -> None:
    """accepted = the container's Created, granted = State.StartedAt (copy_run keeps both,
    since it removes the container); submitted from submit.json."""
    from bench.targets import target_for

    clusters = tmp_path / "clusters"
    shutil.copytree(CLUSTERS_DIR / "local-podman", clusters / "local-podman")
    env_yaml = clusters / "local-podman" / "env.yaml"
    env_yaml.write_text(env_yaml.read_text().replace("runs_dir: .atlas/runs", f"runs_dir: {tmp_path / 'runs'}"))
    target = target_for(load_env("local-podman", clusters))
    assert target.runs_dir == tmp_path / "runs" / "local-podman"
    (target.runs_dir / "r1").mkdir(parents=True)
    (target.runs_dir / "r1" / "submit.json").write_text(json.dumps({"submit_time": 99.5}))
    marks = target.timeline_marks("r1", {"created_time": 100.0, "start_time": 100.75, "submit_time": 99.5})
    assert marks["submitted"]["source"] == "bench-host" and marks["accepted"]["source"] == "podman"
    got = phase_seconds(build_timeline(marks))
    assert got["deliver"] == 0.5 and got["queue"] == 0.75 and got["pull"] is None


def test_the_push_time_reaches_the_local_runs_marks_through_submit_json(tmp_path: Path, monkeypatch) -> None:
    """ATLAS_PUSHED_AT (the git hook, the deploy workflow) is read at submit and kept in
    submit.json, since collection may run in another process; bad values are refused."""
    from bench.errors import AtlasError
    from bench.targets import JobSpec, target_for
    from bench.targets.lifecycle import Submission

    clusters = tmp_path / "clusters"
    (clusters / "loc").mkdir(parents=True)
    (clusters / "loc" / "env.yaml").write_text(f"kind: local\nruns_dir: {tmp_path / 'runs'}\n")
    target = target_for(load_env("loc", clusters))
    monkeypatch.setenv("ATLAS_PUSHED_AT", "2023-11-14T22:13:20Z")
    (target.runs_dir / "r1").mkdir(parents=True)
    target.write_submit(JobSpec("r1", "smoke", "abc1234"), 1700000005.0, ["true"], spawned_time=1700000005.25)
    marks = target.timeline_marks("r1", {})
    assert marks["pushed"]["time"] == 1700000000.0 and marks["submitted"]["time"] == 1700000005.0
    assert marks["accepted"]["time"] == 1700000005.25 and marks["granted"]["reason"].startswith("no scheduler")
    monkeypatch.setenv("ATLAS_PUSHED_AT", "last tuesday")
    with pytest.raises(AtlasError, match="ATLAS_PUSHED_AT='last tuesday' is not a time"):
        Submission.checked(target, "smoke", "a" * 40)
    assert sorted(p.name for p in target.runs_dir.iterdir()) == ["r1"]  # nothing submitted
