"""The timeline of a run that ran more than once: preempted and resubmitted, requeued by
Slurm, or rerun by hand in the same run folder.

Why apart: each attempt has its own marks (its submit, its grant, its workload start,
first and last iteration, exit), and a phase cut between marks of two attempts is wrong
(a requeued job's `queue` from the first submit to the second start swallowed the first
attempt's training; `train` from the first attempt's first iteration to the last one's
last iteration swallowed everything between them). So the phases are cut attempt by
attempt, in order, and what happened between two attempts has its own named phases:

    ... warmup, train, preempted (last iteration -> the attempt's exit: checkpoint and exit),
    requeue | resubmit (that exit -> the next attempt waits for resources), queue, launch,
    warmup, train, ..., finish, collect

Each entry carries its `attempt` (1, 2, ...). A phase that repeats (queue, launch, warmup,
train) counts the sum of its attempts wherever one figure is read (`phase_entry`): the
run's queue wait is the sum of its attempts' queue phases, its training time the sum of
their training. A scheduler that lists its attempts (Slurm's `scheduler.attempt_times`)
gives each attempt's submit, ready, start and end; the queue phases are then exactly its
queue wait (`scheduler.queue_wait_total_s`).
"""

from __future__ import annotations

from typing import Any

from bench.records.contract import TRAIN_JSONL
from bench.records.timeline import (
    JOB_RESOLUTION_S,
    PROCESS_START_RESOLUTION_S,
    SLURM_RESOLUTION_S,
    _known,
    _null,
    _span,
    _why_missing,
    absent,
    mark,
    phases_from_marks,
)

# The marks of one attempt (the run's first attempt also has pushed/submitted, its last collected).
ATTEMPT_MARKS = ("accepted", "granted", "recorder_start", "workload_start", "first_iter", "last_iter", "exit")


def recorder_windows(record: dict[str, Any]) -> list[tuple[float, float | None]]:
    """(start, end) of each recorder run in the folder, oldest first ([] when a start is unknown)."""
    previous = record.get("previous_attempts") if isinstance(record.get("previous_attempts"), list) else []
    attempts = [a for a in previous if isinstance(a, dict)] + [record]
    windows = []
    for entry in attempts:
        start, end = mark(entry.get("start_time"), "job", 0), mark(entry.get("end_time"), "job", 0)
        if start is None:
            return []
        windows.append((start["time"], end["time"] if end else None))
    return sorted(windows, key=lambda w: w[0])


def job_attempt_marks(record: dict[str, Any], log: Any) -> list[dict[str, Any]]:
    """Each recorder run's own marks on the job's clock: recorder_start, workload_start
    (its run_start minus setup_s), first_iter (its warmup event), last_iter (its last train
    line), exit (its end). [] when the record holds one attempt, or its attempts' starts
    are unknown."""
    windows = recorder_windows(record)
    if len(windows) < 2:
        return []
    out = []
    for i, (start, end) in enumerate(windows):
        until = windows[i + 1][0] if i + 1 < len(windows) else float("inf")
        mine = [e for e in log.events if start <= float(e["time"]) < until]
        run_starts = [e for e in mine if e["event"] == "run_start"]
        warmups = [e for e in mine if e["event"] == "warmup"]
        trains = [e for e in mine if e["event"] == "train"]
        marks: dict[str, Any] = {"recorder_start": mark(start, "job", JOB_RESOLUTION_S)}
        setup = warmups[0].get("setup_s") if warmups else None
        if run_starts and isinstance(setup, (int, float)) and not isinstance(setup, bool) and setup >= 0:
            marks["workload_start"] = mark(
                float(run_starts[0]["time"]) - float(setup), "job", PROCESS_START_RESOLUTION_S
            )
        marks["first_iter"] = (
            mark(warmups[0]["time"], "job", JOB_RESOLUTION_S)
            if warmups
            else absent(f"attempt {i + 1}: {TRAIN_JSONL} has no warmup event for it")
        )
        marks["last_iter"] = (
            mark(trains[-1]["time"], "job", JOB_RESOLUTION_S)
            if trains
            else absent(f"attempt {i + 1}: {TRAIN_JSONL} has no train line for it")
        )
        exit_mark = mark(end, "job", JOB_RESOLUTION_S)
        marks["exit"] = exit_mark or absent(f"attempt {i + 1}: the recorder wrote no end time (killed?)")
        out.append({k: v for k, v in marks.items() if v is not None})
    return out


def scheduler_attempt_marks(attempts: Any) -> list[dict[str, Any]]:
    """Slurm's `attempt_times` (ansible/roles/atlas/library/atlas_slurm_jobs.py) as marks:
    submitted_again (the requeue's or resubmitted job's submit, slurmctld), accepted (when
    it began to wait: that submit, or the end of the attempt before it), granted (its
    start), and `how` (requeue: the same job id again; resubmit: a new job)."""
    out: list[dict[str, Any]] = []
    previous_job = None
    for entry in attempts if isinstance(attempts, list) else ():
        if not isinstance(entry, dict):
            return []
        job_id = str(entry.get("job_id") or "")
        out.append(
            {
                "job_id": job_id,
                "how": "requeue" if job_id and job_id == previous_job else "resubmit",
                "submitted_again": mark(entry.get("submit_time"), "slurmctld", SLURM_RESOLUTION_S),
                "accepted": mark(entry.get("ready_time"), "slurmctld", SLURM_RESOLUTION_S),
                "granted": mark(entry.get("start_time"), "slurmctld", SLURM_RESOLUTION_S),
            }
        )
        previous_job = job_id
    return out


def _clamped(phase: str, start: dict[str, Any], end: dict[str, Any]) -> dict[str, Any]:
    """A span between attempts; one that is negative by no more than its clocks' resolution
    (a whole-second start against a finer end) is 0, since the clocks cannot order them."""
    entry = _span(phase, start, end)
    if -entry["resolution_s"] <= entry["seconds"] < 0:
        entry["end"], entry["seconds"] = entry["start"], 0.0
    return entry


def _cut(phase: str, marks: dict[str, Any], first: str, last: str) -> dict[str, Any]:
    a, b = _known(marks, first), _known(marks, last)
    if a is None or b is None:
        return _null(phase, _why_missing(marks, last if b is None else first))
    return _clamped(phase, a, b)


def attempt_phases(
    run_marks: dict[str, Any], jobs: list[dict[str, Any]], kinds: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the phases in order, each with its `attempt`; each attempt's marks).

    `run_marks`: the run's own marks (pushed, submitted, the first attempt's kind marks,
    collected); `jobs`: each attempt's job marks; `kinds`: the scheduler's attempts when it
    lists as many as the record holds, else []."""
    attempts: list[dict[str, Any]] = []
    phases: list[dict[str, Any]] = []
    last = len(jobs) - 1
    for i, job in enumerate(jobs):
        kind = kinds[i] if kinds else {}
        marks = {k: v for k, v in job.items()}
        if i == 0:
            marks.update({k: v for k, v in run_marks.items() if k not in job and k != "collected"})
            marks.update({k: v for k, v in kind.items() if k in ("accepted", "granted") and v})
        elif kind:
            marks.update({name: kind[name] for name in ("accepted", "granted") if kind.get(name)})
        else:  # a rerun in the same folder (by hand, or a kind that lists no attempts): its own start
            unknown = absent(
                f"attempt {i + 1}: no scheduler times for it (a rerun in the same run folder, or the "
                "scheduler lists another number of attempts than the record)"
            )
            granted = run_marks.get("granted")
            no_scheduler = isinstance(granted, dict) and granted.get("time") is None and granted.get("reason")
            marks["accepted"] = job.get("recorder_start") if no_scheduler else unknown
            marks["granted"] = granted if no_scheduler else unknown
        if i == last:
            marks["collected"] = run_marks.get("collected")
        cut = [p for p in phases_from_marks({k: v for k, v in marks.items() if v is not None})]
        if i > 0:  # trigger and deliver are the first attempt's; staging and pulls again only where they happened
            cut = [p for p in cut if p["phase"] not in ("trigger", "deliver")]
            cut = [p for p in cut if p["phase"] not in ("stage", "pull") or p["seconds"] is not None]
        if i < last:  # this attempt ended preempted: no finish, no collect
            cut = [p for p in cut if p["phase"] not in ("finish", "collect")]
        if i > 0:
            before = attempts[-1]["marks"]
            how = kind.get("how") or "resubmit"
            start = _known(marks, "accepted") or _known(marks, "recorder_start")
            between = (
                _clamped(how, before["exit"], start)
                if _known(before, "exit") and start
                else _null(how, _why_missing(before, "exit") if not _known(before, "exit") else "no start mark")
            )
            phases.append(between | {"attempt": i + 1})
        phases.extend(entry | {"attempt": i + 1} for entry in cut)
        if i < last:
            phases.append(_cut("preempted", marks, "last_iter", "exit") | {"attempt": i + 1})
        attempts.append(
            {
                "attempt": i + 1,
                "job_id": kind.get("job_id"),
                "how": kind.get("how") if i > 0 else None,
                "marks": {k: v for k, v in marks.items() if k in ATTEMPT_MARKS and isinstance(v, dict)},
            }
        )
    return phases, attempts


def run_marks_of(attempts: list[dict[str, Any]], run_marks: dict[str, Any]) -> dict[str, Any]:
    """The run's marks: its own (pushed, submitted, collected), the first attempt's up to its
    first iteration and the last attempt's from its last iteration (span_between and the
    first iteration still read them); each attempt's are in `attempts`."""
    first, final = attempts[0]["marks"], attempts[-1]["marks"]
    out = {k: v for k, v in run_marks.items() if k not in ATTEMPT_MARKS}
    for name in ("accepted", "granted", "recorder_start", "workload_start", "first_iter"):
        if name in first:
            out[name] = first[name]
    for name in ("last_iter", "exit"):
        if name in final:
            out[name] = final[name]
    return out


def resumed_timeline(
    record: dict[str, Any],
    log: Any,
    marks: dict[str, Any],
    scheduler_attempts: Any,
    reasons: dict[str, str] | None = None,
) -> dict[str, Any] | None:
    """run.json `timeline` of a record with more than one attempt (None for one attempt:
    bench/records/timeline.py's `build_timeline` cuts it). `marks`: the run's marks as
    collected (the job's, the kind's first attempt's, submitted, collected);
    `scheduler_attempts`: the kind's list of attempts (Slurm), if any."""
    jobs = job_attempt_marks(record, log)
    if not jobs:
        return None
    kinds = scheduler_attempt_marks(scheduler_attempts)
    if len(kinds) != len(jobs):
        kinds = []  # matched only attempt for attempt: else the kind's phases of later attempts are unknown
    kept = {k: v for k, v in marks.items() if isinstance(v, dict) and (_known(marks, k) or v.get("reason"))}
    phases, attempts = attempt_phases(kept, jobs, kinds)
    for i, entry in enumerate(phases):
        if reasons and entry["phase"] in reasons:
            phases[i] = _null(entry["phase"], reasons[entry["phase"]]) | {"attempt": entry["attempt"]}
    checkpoint_s = 0.0
    for job in jobs:
        first, last = _known(job, "first_iter"), _known(job, "last_iter")
        if first and last:
            checkpoint_s += sum(
                float(e["seconds"])
                for e in log.of("checkpoint")
                if isinstance(e.get("seconds"), (int, float)) and first["time"] <= e["time"] <= last["time"]
            )
    return {
        "marks": run_marks_of(attempts, kept),
        "phases": phases,
        "attempts": attempts,
        "checkpoint_s": round(checkpoint_s, 6),
    }
