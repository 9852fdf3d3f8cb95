"""One timeline per run: where the time between `bench run` and the placed record went.

A run's life is cut into phases, in order: trigger (the push -> bench's submit, when the
run came from a push), deliver (bench's submit -> the scheduler has
the job), queue (accepted -> resources granted), stage (data staging), pull (image pull),
launch (granted -> the workload's process starts), warmup (process start -> first
training iteration), train (first -> last iteration), finish (last iteration -> exit)
and collect (exit -> record placed). Each phase is cut between two *marks*: instants
read from one clock each (the bench host, slurmctld, the API server, podman, the job's
own). A mark is `{"time", "source", "resolution_s"}`; a mark a kind knows does not exist
is `{"time": None, "reason": ...}` (a bare process has no scheduler), and the phases it
bounds are then null with that reason: a phase is never 0 for "unknown".

Where a phase starts on one clock and ends on another, it says so (`clocks_meet`); a
negative or overlapping span beyond the clocks' resolution is a named data problem
(`timeline_problems`, reported by `bench check`). The phases of the chain deliver ...
collect add up to submitted -> collected.
"""

from __future__ import annotations

import json
import math
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench.errors import AtlasError
from bench.records.contract import TRAIN_JSONL
from bench.records.jobfiles import read_bytes
from bench.records.strict_numbers import LATEST_TIME
from bench.records.trainlog import TrainLog

PHASES = ("deliver", "queue", "stage", "pull", "launch", "warmup", "train", "finish", "collect")
# A resumed run's phases between two attempts (bench/records/timeline_attempts.py), and
# every phase a timeline may hold, in the order they are drawn.
BETWEEN_ATTEMPTS = ("preempted", "requeue", "resubmit")
# A run that came from a push (ATLAS_PUSHED_AT) has a `trigger` phase first: push -> bench's submit.
TRIGGER = "trigger"
ALL_PHASES = (TRIGGER, *PHASES[:7], *BETWEEN_ATTEMPTS, *PHASES[7:])
MARKS = (
    "pushed",
    "submitted",
    "accepted",
    "granted",
    "staged",
    "pull_start",
    "pulled",
    "recorder_start",
    "workload_start",
    "first_iter",
    "last_iter",
    "exit",
    "collected",
)
SOURCES = ("bench-host", "slurmctld", "ansible-runner", "api-server", "kueue", "podman", "job")
# Clock resolutions (s): time.time() on the bench host and in the job is read to the
# microsecond but written rounded; Slurm's Submit/Start are whole seconds.
HOST_RESOLUTION_S = 0.001
JOB_RESOLUTION_S = 0.001
# The workload's process start (run_start - setup_s) is read from the kernel in clock ticks.
PROCESS_START_RESOLUTION_S = 0.01
SLURM_RESOLUTION_S = 1.0
EARLIEST_PUSH = 946_684_800.0  # 2000-01-01 UTC: an earlier push time (ATLAS_PUSHED_AT=1) is a mistake
PUSHED_AT_VARIABLE = "ATLAS_PUSHED_AT"  # set by the git hook / CI: the push's time, Unix seconds or ISO 8601

# The phase's (start mark, end mark); launch is computed apart (it starts at the latest of several).
SPANS: dict[str, tuple[str, str]] = {
    TRIGGER: ("pushed", "submitted"),
    "deliver": ("submitted", "accepted"),
    "queue": ("accepted", "granted"),
    "stage": ("granted", "staged"),
    "pull": ("pull_start", "pulled"),
    "warmup": ("workload_start", "first_iter"),
    "train": ("first_iter", "last_iter"),
    "finish": ("last_iter", "exit"),
    "collect": ("exit", "collected"),
}


def mark(time: Any, source: str, resolution_s: float) -> dict[str, Any] | None:
    """A mark, or None when `time` is not a finite positive number (an unknown is never 0)."""
    if isinstance(time, bool) or not isinstance(time, (int, float)) or not math.isfinite(time) or time <= 0:
        return None
    return {"time": round(float(time), 6), "source": source, "resolution_s": float(resolution_s)}


def absent(reason: str) -> dict[str, Any]:
    """A mark the kind knows does not exist here (no scheduler, no image): its phases are null with `reason`."""
    return {"time": None, "reason": reason}


def pushed_at(environ: dict[str, str] | None = None) -> float | None:
    """`ATLAS_PUSHED_AT` (Unix seconds or ISO 8601) as Unix seconds; None when unset.

    Read at submit (and kept in submit.json / the Slurm ledger), since collection may run
    in another process, on another day."""
    raw = (environ if environ is not None else os.environ).get(PUSHED_AT_VARIABLE, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        try:
            stamp = datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError:
            value = -1.0
        else:
            value = (stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)).timestamp()
    if not math.isfinite(value) or not EARLIEST_PUSH <= value <= LATEST_TIME:
        raise AtlasError(
            f"{PUSHED_AT_VARIABLE}={raw[:60]!r} is not a time between 2000 and 2100: set it to the push's Unix seconds "
            "(`date +%s.%N`) or an ISO 8601 time (2026-11-24T06:00:00Z), or unset it"
        )
    return value


def iso_utc(text: Any) -> float | None:
    """An ISO 8601 time as Unix seconds; one without a zone is UTC (ansible-runner's `created`)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)).timestamp()


def _known(marks: dict[str, Any], name: str) -> dict[str, Any] | None:
    entry = marks.get(name)
    return entry if isinstance(entry, dict) and isinstance(entry.get("time"), (int, float)) else None


def _why_missing(marks: dict[str, Any], name: str) -> str:
    entry = marks.get(name)
    if isinstance(entry, dict) and entry.get("reason"):
        return str(entry["reason"])
    return f"no {name} mark"


def _span(phase: str, start: dict[str, Any], end: dict[str, Any]) -> dict[str, Any]:
    a, b = str(start.get("source")), str(end.get("source"))
    entry: dict[str, Any] = {
        "phase": phase,
        "start": start["time"],
        "end": end["time"],
        "seconds": round(end["time"] - start["time"], 6),
        "source": a if a == b else f"{a} → {b}",
        "resolution_s": max(float(start.get("resolution_s") or 0.0), float(end.get("resolution_s") or 0.0)),
    }
    if a != b:
        entry["clocks_meet"] = [a, b]
    return entry


def _null(phase: str, reason: str) -> dict[str, Any]:
    return {"phase": phase, "start": None, "end": None, "seconds": None, "reason": reason}


def _launch(marks: dict[str, Any]) -> dict[str, Any]:
    """Resources granted (or the later of staged / pulled) -> the workload's start (else the recorder's)."""
    end = _known(marks, "workload_start") or _known(marks, "recorder_start")
    if end is None:
        return _null("launch", _why_missing(marks, "workload_start"))
    starts = [m for name in ("granted", "staged", "pulled") if (m := _known(marks, name)) is not None]
    if not starts:
        granted = marks.get("granted")
        if isinstance(granted, dict) and granted.get("reason"):
            accepted = _known(marks, "accepted")  # nothing grants resources here: launch starts when accepted
            if accepted is not None:
                return _span("launch", accepted, end)
        return _null("launch", _why_missing(marks, "granted"))
    return _span("launch", max(starts, key=lambda m: m["time"]), end)


def _pulled_first(marks: dict[str, Any], granted: Any, staged: Any) -> Any:
    """Where the image was pulled between the grant and the end of staging (on Kubernetes the
    staging init container runs the training image, so it pulls it), staging starts when the
    pull ended: the pull's seconds are counted once, in `pull`, and the phases still add up."""
    pulled = _known(marks, "pulled")
    if granted is None or staged is None or pulled is None:
        return granted
    return pulled if granted["time"] <= pulled["time"] <= staged["time"] else granted


def phases_from_marks(marks: dict[str, Any]) -> list[dict[str, Any]]:
    """The phases, in order, each a span between two marks or null with the reason it is
    unknown; `trigger` (push -> submit) first where the run came from a push."""
    pushed, submitted = (_known(marks, m) for m in SPANS[TRIGGER])
    out = [_span(TRIGGER, pushed, submitted)] if pushed and submitted else []
    for phase in PHASES:
        if phase == "launch":
            out.append(_launch(marks))
            continue
        first, last = SPANS[phase]
        a, b = _known(marks, first), _known(marks, last)
        if phase == "stage":
            a = _pulled_first(marks, a, b)
        if a is None or b is None:
            missing = [name for name, m in ((first, a), (last, b)) if m is None]
            # a reason the kind gave beats "no mark"; the phase's own end mark's reason first
            said = [
                name for name in reversed(missing) if isinstance(marks.get(name), dict) and marks[name].get("reason")
            ]
            out.append(_null(phase, _why_missing(marks, (said or missing)[0])))
        else:
            out.append(_span(phase, a, b))
    return out


def build_timeline(
    marks: dict[str, Any], reasons: dict[str, str] | None = None, checkpoint_s: float | None = None
) -> dict[str, Any]:
    """run.json `timeline`: the marks, the phases cut from them, and the checkpoint time inside train.

    `reasons` (phase -> why) nulls a phase whatever the marks say: the kind's marks could
    not be read, or the record is imported. Marks that are neither known nor absent are dropped."""
    kept = {k: v for k, v in marks.items() if isinstance(v, dict) and (_known(marks, k) or v.get("reason"))}
    phases = phases_from_marks(kept)
    for i, entry in enumerate(phases):
        if reasons and entry["phase"] in reasons:
            phases[i] = _null(entry["phase"], reasons[entry["phase"]])
    return {"marks": kept, "phases": phases, "checkpoint_s": checkpoint_s}


def null_timeline(reason: str) -> dict[str, Any]:
    """Every phase null with one reason (imported records, records collected before timelines)."""
    return {"marks": {}, "phases": [_null(p, reason) for p in PHASES]}  # no checkpoint figure either


def phase_seconds(timeline: Any) -> dict[str, float | None]:
    """phase -> seconds (None where unknown) of a record's timeline; {} when it has none. A
    phase that ran once per attempt (a resumed run) counts the sum of its attempts."""
    phases = timeline.get("phases") if isinstance(timeline, dict) else None
    if not isinstance(phases, list):
        return {}
    out: dict[str, float | None] = {}
    names = [e["phase"] for e in phases if isinstance(e, dict) and e.get("phase") in ALL_PHASES]
    for name in dict.fromkeys(names):
        value = (phase_entry(timeline, name) or {}).get("seconds")
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        out[name] = float(value) if ok else None
    return out


def phase_entry(timeline: Any, phase: str) -> dict[str, Any] | None:
    """The `phase` entry of a timeline, or None; for a resumed run, whose phases repeat per
    attempt, one entry with their sum (null with the reason when an attempt's is unknown)."""
    phases = timeline.get("phases") if isinstance(timeline, dict) else None
    found = [e for e in (phases if isinstance(phases, list) else ()) if isinstance(e, dict) and e.get("phase") == phase]
    return aggregate(found, phase)


def aggregate(entries: list[dict[str, Any]], phase: str) -> dict[str, Any] | None:
    """One figure for a phase that ran once per attempt: the sum of its seconds, the widest
    resolution, its clocks; null (with the first reason) when any attempt's is unknown."""
    if len(entries) <= 1:
        return entries[0] if entries else None
    unknown = [e for e in entries if not isinstance(e.get("seconds"), (int, float)) or isinstance(e["seconds"], bool)]
    if unknown:
        reason = str(unknown[0].get("reason") or "unknown")
        where = "" if len(unknown) == len(entries) else f"attempt {unknown[0].get('attempt')}: "
        return _null(phase, where + reason)
    return {
        "phase": phase,
        "start": entries[0].get("start"),
        "end": entries[-1].get("end"),
        "seconds": round(sum(float(e["seconds"]) for e in entries), 6),
        "source": ", ".join(sorted({str(e.get("source")) for e in entries})),
        "resolution_s": max(float(e.get("resolution_s") or 0.0) for e in entries),
        "attempts": len(entries),
    }


def span_between(timeline: Any, first: str, last: str) -> tuple[float, float] | None:
    """(seconds, resolution) from mark `first` to mark `last`, or None when either is unknown."""
    marks = timeline.get("marks") if isinstance(timeline, dict) else None
    if not isinstance(marks, dict):
        return None
    a, b = _known(marks, first), _known(marks, last)
    if a is None or b is None:
        return None
    res = max(float(a.get("resolution_s") or 0.0), float(b.get("resolution_s") or 0.0))
    return b["time"] - a["time"], res


def timeline_problems(timeline: Any) -> list[str]:
    """Named data problems: a phase that ends before it starts, or overlaps the one before
    it, by more than its clocks' resolution. Each names the clocks, since two clocks
    disagreeing is the usual cause. (A gap is no problem: a phase between is unknown.)"""
    if not isinstance(timeline, dict):
        return []
    problems: list[str] = []
    known = [p for p in timeline.get("phases") or () if isinstance(p, dict) and p.get("seconds") is not None]
    for entry in known:
        if entry["seconds"] < -entry.get("resolution_s", 0.0):
            problems.append(
                f"timeline: phase {entry['phase']} ends {-entry['seconds']:.3f} s before it starts "
                f"(clocks {entry.get('source')}: they disagree beyond their resolution {entry.get('resolution_s')} s)"
            )
    for before, after in zip(known, known[1:]):
        if (before["phase"], after["phase"]) == ("stage", "pull"):
            continue  # data staging and the image pull may run side by side
        slack = max(before.get("resolution_s", 0.0), after.get("resolution_s", 0.0))
        if after["start"] < before["end"] - slack:
            problems.append(
                f"timeline: phase {after['phase']} starts {before['end'] - after['start']:.3f} s before "
                f"{before['phase']} ends (clocks {before.get('source')} and {after.get('source')})"
            )
    return problems


def job_marks(record: dict[str, Any], log: Any) -> tuple[dict[str, Any], float | None]:
    """The job's own marks (its clock) from run.json and train.jsonl (a TrainLog), and the
    checkpoint seconds between the first and last iteration.

    recorder_start: run.json start_time (the first attempt's); workload_start: the first
    run_start minus its setup_s (the workload's process start, `warmup` event); first_iter:
    the first `warmup` event (written once the first iteration finished); last_iter: the
    last `train` line; exit: run.json end_time (the recorder saw the workload exit)."""
    previous = record.get("previous_attempts") if isinstance(record.get("previous_attempts"), list) else []
    starts = [a.get("start_time") for a in previous if isinstance(a, dict)] + [record.get("start_time")]
    known_starts = [t for t in starts if mark(t, "job", 0) is not None]
    first_start = mark(min(known_starts), "job", JOB_RESOLUTION_S) if known_starts else None
    marks: dict[str, Any] = {"recorder_start": first_start}
    warmups, run_starts, trains = log.of("warmup"), log.of("run_start"), log.of("train")
    setup = warmups[0].get("setup_s") if warmups else None
    no_warmup = absent(f"{TRAIN_JSONL} has no warmup event: the workload's start-up is unknown")
    if run_starts and isinstance(setup, (int, float)) and not isinstance(setup, bool) and setup >= 0:
        marks["workload_start"] = mark(float(run_starts[0]["time"]) - float(setup), "job", PROCESS_START_RESOLUTION_S)
    marks["first_iter"] = mark(warmups[0]["time"], "job", JOB_RESOLUTION_S) if warmups else no_warmup
    marks["last_iter"] = (
        mark(trains[-1]["time"], "job", JOB_RESOLUTION_S) if trains else absent(f"{TRAIN_JSONL} has no train line")
    )
    marks["exit"] = mark(record.get("end_time"), "job", JOB_RESOLUTION_S)
    checkpoint_s = None
    first, last = _known(marks, "first_iter"), _known(marks, "last_iter")
    if first and last:
        inside = [
            float(e["seconds"])
            for e in log.of("checkpoint")
            if isinstance(e.get("seconds"), (int, float)) and first["time"] <= e["time"] <= last["time"]
        ]
        checkpoint_s = round(sum(inside), 6)
    return {k: v for k, v in marks.items() if v is not None}, checkpoint_s


IMPORTED = "imported: the files give no submit, scheduler, start-up or iteration times"
# The train.jsonl events the job's marks come from (the last `train` line is found from the end).
MARK_EVENTS = (b'"run_start"', b'"warmup"', b'"checkpoint"')


def marks_log(path: Path) -> TrainLog:
    """The few train.jsonl events the job's marks need, without parsing every line: a
    48-hour log has 10^5 lines, and collection must stay cheap (benchmarks/timeline_overhead.py).
    Only complete lines count; an event without a finite time is left out."""
    log = TrainLog()
    try:
        data = read_bytes(Path(path))
    except OSError:
        return log
    picked = sorted({line for word in MARK_EVENTS for line in _lines_with(data, word)})
    # a resumed run: each attempt's last train line too, the one before the next run_start
    before = [_last_train(data, at) for at, line in picked if b'"run_start"' in line]
    for raw in [line for _, line in picked] + _last_train(data) + [line for found in before for line in found]:
        event = _event(raw)
        if event is not None and mark(event.get("time"), "", 0):
            log.events.append(event)
    unique = {json.dumps(e, sort_keys=True): e for e in log.events}  # a line picked twice counts once
    log.events = sorted(unique.values(), key=lambda e: e["time"])
    return log


def _lines_with(data: bytes, word: bytes) -> list[tuple[int, bytes]]:
    """(offset, line) of every complete line holding `word` (bytes.find: no per-line Python loop)."""
    found, pos = [], data.find(word)
    while pos >= 0:
        start, end = data.rfind(b"\n", 0, pos) + 1, data.find(b"\n", pos)
        if end < 0:
            break  # the last line is incomplete (a job killed while writing)
        found.append((start, data[start:end]))
        pos = data.find(word, end)
    return found


def _last_train(data: bytes, until: int | None = None) -> list[bytes]:
    """The last complete `train` line before offset `until` (the end), read backwards ([] when none)."""
    end = data.rfind(b"\n", 0, len(data) if until is None else until)
    while end > 0:
        start = data.rfind(b"\n", 0, end) + 1
        line = data[start:end]
        if b'"train"' in line:
            event = _event(line)
            if event is not None and event.get("event") == "train":
                return [line]
        end = start - 1
    return []


def _event(raw: bytes) -> dict[str, Any] | None:
    try:
        event = json.loads(raw)
    except ValueError:
        return None
    return event if isinstance(event, dict) and isinstance(event.get("event"), str) else None


# The key of a kind's timeline marks under which it lists each attempt's times (Slurm).
ATTEMPTS_KEY = "attempts"
# Phases that need the kind's marks: null with the reason when the kind could not give them.
KIND_PHASES = ("deliver", "queue", "stage", "pull", "launch")


def submit_time_in_job(record: dict[str, Any]) -> float | None:
    """The submit time the job was started with (`ATLAS_SUBMIT_TIME`, in run.json `scheduler`
    as the recorder wrote it, before collection merges the scheduler's facts in)."""
    sched = record.get("scheduler") if isinstance(record.get("scheduler"), dict) else {}
    found = mark(sched.get("submit_time"), "bench-host", HOST_RESOLUTION_S)
    return found["time"] if found else None


def collected_timeline(
    record: dict[str, Any], log: Any, kind_marks: Any, now: float, submitted: float | None = None
) -> tuple[dict[str, Any], str | None]:
    """run.json `timeline` at collection, and a warning when the kind's marks failed.

    `kind_marks()` is the target's `timeline_marks(run_id, facts)`: an AtlasError from it
    loses no run: the phases it would give are null with the reason, and one warning says so.
    A kind that gives no `submitted` mark at all gets `submitted` (bench's clock at submit,
    passed into the job as ATLAS_SUBMIT_TIME by the kinds that do not keep it themselves:
    Kubernetes and OpenShift); the kinds whose job holds another clock's time there (Slurm's
    SubmitTime) always give their own."""
    if record.get("import"):
        return null_timeline(IMPORTED), None
    marks, checkpoint_s = job_marks(record, log)
    reasons: dict[str, str] | None = None
    warning = None
    try:
        given = dict(kind_marks() or {}) if kind_marks is not None else {}
    except AtlasError as exc:
        given, warning = {}, f"timeline: the platform's marks could not be read ({exc}); its phases are unknown"
        reasons = dict.fromkeys(KIND_PHASES, f"the platform's marks could not be read: {exc}")
    scheduler_attempts = given.pop(ATTEMPTS_KEY, None)  # a scheduler that lists each attempt's times
    marks.update({k: v for k, v in (given or {}).items() if isinstance(v, dict)})
    if "submitted" not in marks and reasons is None and submitted is not None:
        marks["submitted"] = mark(submitted, "bench-host", HOST_RESOLUTION_S)
    marks["collected"] = mark(now, "bench-host", HOST_RESOLUTION_S)
    from bench.records.timeline_attempts import resumed_timeline  # it builds on this module

    resumed = resumed_timeline(record, log, marks, scheduler_attempts, reasons)
    return (resumed or build_timeline(marks, reasons, checkpoint_s)), warning
