"""A resumed run's timeline: each attempt cut from its own marks, named phases between
attempts, repeated phases summed, and the queue equal to the scheduler's figure.

The records are written here as the recorder and the workload write them; the real
Slurm runs (requeue, preemption and resubmission) are in tests/bench/targets/test_slurm.py."""

from __future__ import annotations

import json
from pathlib import Path

from bench.records.timeline import (
    ATTEMPTS_KEY,
    collected_timeline,
    marks_log,
    phase_entry,
    phase_seconds,
    timeline_problems,
)


def _log(path: Path, attempts: list[tuple[float, float, float, float]]) -> Path:
    """train.jsonl of attempts (run_start, warmup, last train, run_stop), each with train lines."""
    lines = []
    for i, (start, warm, last, stop) in enumerate(attempts):
        lines.append({"event": "run_start", "time": start, "iteration": i * 10})
        lines.append({"event": "warmup", "time": warm, "setup_s": 0.5, "iteration": i * 10 + 1})
        t = warm
        while t < last:
            lines.append({"event": "train", "time": t, "iteration": i * 10 + 2, "images_per_s": 10.0})
            t += 1.0
        lines.append({"event": "train", "time": last, "iteration": i * 10 + 9, "images_per_s": 10.0})
        lines.append({"event": "checkpoint", "time": last - 0.5, "seconds": 0.2})
        status = "success" if i == len(attempts) - 1 else "preempted"
        lines.append({"event": "run_stop", "time": stop, "status": status, "iteration": i * 10 + 9})
    path.write_text("".join(json.dumps(e) + "\n" for e in lines))
    return path


def _record(windows: list[tuple[float, float]]) -> dict:
    *previous, (start, end) = windows
    return {
        "start_time": start,
        "end_time": end,
        "previous_attempts": [{"start_time": s, "end_time": e} for s, e in previous],
        "scheduler": {},
    }


def _slurm(submit: float, start: float, attempts: list[dict] | None) -> dict:
    marks = {
        "submitted": {"time": submit - 5.0, "source": "bench-host", "resolution_s": 0.001},
        "accepted": {"time": submit, "source": "slurmctld", "resolution_s": 1.0},
        # sacct's Start of a requeued job is its last start: the bug the attempts fix
        "granted": {"time": start, "source": "slurmctld", "resolution_s": 1.0},
        "staged": {"time": None, "reason": "no staging step"},
        "pull_start": {"time": None, "reason": "no image pull"},
    }
    if attempts is not None:
        marks[ATTEMPTS_KEY] = attempts
    return marks


def test_a_requeued_run_has_each_attempts_phases_and_the_schedulers_queue_wait(tmp_path: Path) -> None:
    # Attempt 1: submitted 1000, started 1001, trained 1005..1100, requeued at 1101 (hold
    # until 1241), exited 1103.5; attempt 2 started 1241, trained 1245..1290, exit 1291.
    attempts = [(1002.0, 1005.0, 1100.0, 1103.0), (1242.0, 1245.0, 1290.0, 1290.5)]
    log = marks_log(_log(tmp_path / "train.jsonl", attempts))
    record = _record([(1001.5, 1103.5), (1241.5, 1291.0)])
    times = [
        {"job_id": "7", "restart": 0, "submit_time": 1000.0, "ready_time": 1000.0, "start_time": 1001.0,
         "end_time": 1104.2},
        {"job_id": "7", "restart": 1, "submit_time": 1101.0, "ready_time": 1104.2, "start_time": 1241.0,
         "end_time": 1291.4},
    ]  # fmt: skip
    queue_wait_total_s = round(sum(t["start_time"] - t["ready_time"] for t in times), 3)
    timeline, warning = collected_timeline(record, log, lambda: _slurm(1000.0, 1241.0, times), 1300.0)
    assert warning is None
    order = [(p["phase"], p["attempt"]) for p in timeline["phases"] if p["seconds"] is not None]
    assert order == [
        ("deliver", 1), ("queue", 1), ("launch", 1), ("warmup", 1), ("train", 1), ("preempted", 1),
        ("requeue", 2), ("queue", 2), ("launch", 2), ("warmup", 2), ("train", 2), ("finish", 2), ("collect", 2),
    ]  # fmt: skip
    seconds = phase_seconds(timeline)
    assert seconds["queue"] == queue_wait_total_s == 137.8  # 1 s, then the hold from the first attempt's end
    assert seconds["train"] == 95.0 + 45.0  # the attempts' training, not the gap between them
    assert seconds["preempted"] == 3.5 and seconds["requeue"] == 0.7
    assert all(p["seconds"] >= 0 for p in timeline["phases"] if p["seconds"] is not None)
    assert timeline_problems(timeline) == []
    assert phase_entry(timeline, "queue")["attempts"] == 2
    assert [a["how"] for a in timeline["attempts"]] == [None, "requeue"]
    assert timeline["marks"]["first_iter"]["time"] == 1005.0 and timeline["marks"]["last_iter"]["time"] == 1290.0
    assert timeline["checkpoint_s"] == 0.4


def test_a_resubmitted_chain_names_the_resubmission(tmp_path: Path) -> None:
    log = marks_log(_log(tmp_path / "train.jsonl", [(11.0, 13.0, 40.0, 41.0), (52.0, 54.0, 80.0, 81.0)]))
    record = _record([(10.5, 41.5), (51.5, 81.5)])
    times = [
        {"job_id": "8", "restart": 0, "submit_time": 9.0, "ready_time": 9.0, "start_time": 10.0, "end_time": 42.0},
        # the next job was submitted (afterany) before the first ended: it waits from that end
        {"job_id": "9", "restart": 0, "submit_time": 41.0, "ready_time": 42.0, "start_time": 51.0, "end_time": 82.0},
    ]
    timeline, _ = collected_timeline(record, log, lambda: _slurm(9.0, 10.0, times), 90.0)
    seconds = phase_seconds(timeline)
    assert seconds["resubmit"] == 0.5 and "requeue" not in seconds
    assert seconds["queue"] == 1.0 + 9.0 and seconds["train"] == 27.0 + 26.0
    assert timeline_problems(timeline) == []


def test_a_rerun_by_hand_has_its_own_start_and_no_scheduler_phases(tmp_path: Path) -> None:
    """No scheduler (a local run rerun in the same folder): the rerun starts at its own
    recorder start; its queue is null with the kind's reason, its launch from that start."""
    log = marks_log(_log(tmp_path / "train.jsonl", [(11.0, 13.0, 40.0, 41.0), (61.0, 63.0, 80.0, 81.0)]))
    local = {
        "submitted": {"time": 9.0, "source": "bench-host", "resolution_s": 0.001},
        "accepted": {"time": 10.0, "source": "bench-host", "resolution_s": 0.001},
        "granted": {"time": None, "reason": "no scheduler: the process starts at once"},
    }
    timeline, _ = collected_timeline(_record([(10.5, 41.5), (60.5, 81.5)]), log, lambda: local, 90.0)
    seconds = phase_seconds(timeline)
    assert seconds["resubmit"] == 19.0 and seconds["train"] == 27.0 + 17.0
    assert seconds["launch"] == 0.5 + 0.0 and seconds["queue"] is None
    assert phase_entry(timeline, "queue")["reason"] == "no scheduler: the process starts at once"
    assert timeline_problems(timeline) == []


def test_a_scheduler_listing_other_attempts_than_the_record_gives_no_mixed_span(tmp_path: Path) -> None:
    log = marks_log(_log(tmp_path / "train.jsonl", [(11.0, 13.0, 40.0, 41.0), (61.0, 63.0, 80.0, 81.0)]))
    times = [{"job_id": "8", "restart": 0, "submit_time": 9.0, "ready_time": 9.0, "start_time": 10.0}] * 3
    timeline, _ = collected_timeline(_record([(10.5, 41.5), (60.5, 81.5)]), log, lambda: _slurm(9.0, 10.0, times), 90.0)
    assert all(p["seconds"] >= 0 for p in timeline["phases"] if p["seconds"] is not None)
    assert phase_seconds(timeline)["queue"] is None  # attempt 2's queue is unknown, never a mix of attempts
