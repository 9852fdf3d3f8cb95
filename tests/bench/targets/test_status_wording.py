"""Status lines say what happened: a run whose recorder was killed after the workload
checkpointed says how to resume (a crafted run folder, read by the real local target)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.environments.load import load_env
from bench.targets import RunState, target_for

RUN_ID = "20261127t010000-01234567-abcd"
RUNNING = {"status": "running"}


def test_a_killed_recorder_whose_workload_checkpointed_gets_the_resume_hint(tmp_path: Path) -> None:
    clusters = tmp_path / "clusters"
    (clusters / "loc").mkdir(parents=True)
    (clusters / "loc" / "env.yaml").write_text(f"kind: local\nlocal: true\nruns_dir: {tmp_path / 'runs'}\n")
    target = target_for(load_env("loc", clusters))
    run_dir = target.runs_dir / RUN_ID
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / "checkpoints" / "ckpt-00000040.pt").write_bytes(b"bundle")
    # the recorder was SIGKILLed: run.json still says running; the workload got SIGTERM,
    # checkpointed and logged its run_stop
    (run_dir / "run.json").write_text(
        json.dumps({"run_id": RUN_ID, "start_time": 1.8e9, "exit": {"status": "running"}})
    )
    events = [
        {"event": "run_start", "time": 1.8e9 + 1},
        {"event": "train", "time": 1.8e9 + 5, "iteration": 40, "images_seen": 640},
        {"event": "checkpoint", "time": 1.8e9 + 6, "iteration": 40},
        {"event": "run_stop", "time": 1.8e9 + 7, "status": "preempted"},
    ]
    (run_dir / "train.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    status = target.status_from_record(RUN_ID, False, None, None)
    assert status.state == RunState.FAILED
    assert status.detail.startswith("preempted (run.json's final write was lost")
    assert "a checkpoint was saved" in status.detail and "to resume" in status.detail


def test_a_finished_run_whose_final_write_was_lost_gets_no_resume_hint(tmp_path: Path) -> None:
    clusters = tmp_path / "clusters"
    (clusters / "loc").mkdir(parents=True)
    (clusters / "loc" / "env.yaml").write_text(f"kind: local\nlocal: true\nruns_dir: {tmp_path / 'runs'}\n")
    target = target_for(load_env("loc", clusters))
    run_dir = target.runs_dir / RUN_ID
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / "checkpoints" / "ckpt-00000040.pt").write_bytes(b"bundle")
    (run_dir / "run.json").write_text(
        json.dumps({"run_id": RUN_ID, "start_time": 1.8e9, "exit": {"status": "running"}})
    )
    events = [{"event": "run_start", "time": 1.8e9 + 1}, {"event": "run_stop", "time": 1.8e9 + 7, "status": "success"}]
    (run_dir / "train.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    status = target.status_from_record(RUN_ID, False, None, None)
    assert status.state == RunState.COMPLETED and "to resume" not in status.detail


def test_a_full_disk_says_disk_full_not_bad_configuration(tmp_path: Path) -> None:
    clusters = tmp_path / "clusters"
    (clusters / "loc").mkdir(parents=True)
    (clusters / "loc" / "env.yaml").write_text(f"kind: local\nlocal: true\nruns_dir: {tmp_path / 'runs'}\n")
    target = target_for(load_env("loc", clusters))
    run_dir = target.runs_dir / RUN_ID
    run_dir.mkdir(parents=True)
    # the workload found no room for its checkpoint (workflows/biggan: CheckpointSpaceError, exit 74)
    exit_info = {"status": "failed", "code": 74, "signal": None}
    (run_dir / "run.json").write_text(json.dumps({"run_id": RUN_ID, "start_time": 1.8e9, "exit": exit_info}))
    status = target.status_from_record(RUN_ID, False, None, None)
    assert status.state == RunState.FAILED
    assert "exit code 74: disk full" in status.detail and "bad configuration" not in status.detail
