"""A record whose recorder lost its final write, rebuilt at collect from train.jsonl.

The recorder writes run.json at start (exit.status "running") and again at the end. When
the final write fails (a full disk, EDQUOT) or the recorder dies right after the job, the
job's own log still says how it ended: the last segment of train.jsonl closes with the
workload's `run_stop` (status, time). Collect then rebuilds `exit` and `end_time` from
that run_stop and says so in `exit.rebuilt`, so the run is neither "running" for ever nor
dropped from the comparison; a run whose last segment has no run_stop is left as it is
(its job was killed: the record keeps saying "running", and check names it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.records.contract import (
    EXIT_RUNNING,
    FINISHED_OK,
    STATUS_CANCELLED,
    STATUS_FAILED,
    STATUS_PREEMPTED,
    TRAIN_JSONL,
    status_exit_code,
)
from bench.records.trainlog import read_train_log, segments

REBUILT = "run.json's final write was lost; exit and end_time rebuilt from train.jsonl's last run_stop"
STATUSES = (*FINISHED_OK, STATUS_PREEMPTED, STATUS_FAILED, STATUS_CANCELLED)


def final_stop(run_dir: Path, start_time: Any) -> dict[str, Any] | None:
    """The run_stop closing train.jsonl's last segment, if that segment began at or after
    this attempt's start (a run_stop of an earlier attempt says nothing of this one)."""
    log = read_train_log(run_dir / TRAIN_JSONL)
    parts = segments(log)
    if not parts:
        return None
    start, stop, _ = parts[-1]
    if stop is None or stop.get("status") not in STATUSES:
        return None
    if isinstance(start_time, (int, float)) and float(start["time"]) < float(start_time) - 5.0:
        return None
    return stop


def rebuild_lost_final_write(record: Any, run_dir: Path) -> Any:
    """`record` with exit/end_time from train.jsonl when it still says running but the
    workload's log says it stopped; any other record unchanged."""
    if not isinstance(record, dict) or not isinstance(record.get("exit"), dict):
        return record
    if record["exit"].get("status") != EXIT_RUNNING:
        return record
    stop = final_stop(run_dir, record.get("start_time"))
    if stop is None:
        return record
    status = str(stop["status"])
    record["exit"] = {"status": status, "code": status_exit_code(status), "signal": None, "rebuilt": REBUILT}
    record["end_time"] = float(stop["time"])
    if isinstance(record.get("scheduler"), dict) and record["scheduler"].get("end_time") is None:
        record["scheduler"]["end_time"] = float(stop["time"])
    return record
