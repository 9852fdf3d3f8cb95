"""One vocabulary of time: every time figure is a timeline phase or a named sum of phases.

A run's timeline (bench/records/timeline.py) cuts its life into phases. The report's
other time figures are sums of them, computed from the phases of the same run, so the
identity the report prints ("start-up 7.50 s = launch 0.500 + warmup 7.00") holds by
construction and never needs a second definition to be reconciled:

- push to result = trigger + submit to result (only a run that came from a push);
- submit to result = deliver + queue + stage + pull + launch + warmup (+ the phases
  between a resumed run's attempts) + train + finish + collect;
- platform overhead = submit to result - train (every phase of the chain but train);
- start-up = launch + warmup (resources granted -> the first finished iteration);
- time to train = warmup + train (the workload's process start -> its last iteration).

A phase the kind does not have (a bare process has no scheduler, no image) adds nothing
and is said so ("no scheduler"), which is not 0 and not unknown; any other unknown phase
leaves the sum unknown: a sum with a hole in it would not be the sum it is called.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.records.strict_numbers import finite
from bench.records.timeline import ALL_PHASES, TRIGGER, phase_entry

CHAIN = tuple(p for p in ALL_PHASES if p != TRIGGER)  # bench's submit -> the placed record, in order
# What a kind says of a mark it does not have (bench.records.timeline.absent: local, Slurm,
# the container and folder kinds): the words before the colon are the label people see.
_LACKS = re.compile(r"(no scheduler|no staging step|no image pull|no image|no pull)\b")


@dataclass(frozen=True)
class PhaseSum:
    """A named sum of phases. `needs`: a phase without which the sum does not exist (a run
    that came from no push has no push to result)."""

    key: str
    label: str
    phases: tuple[str, ...]
    needs: str | None = None

    def formula(self) -> str:
        """`submit to result = deliver + queue + ...` (the between-attempt phases said once, in words)."""
        shown = [p for p in self.phases if p not in ("preempted", "requeue", "resubmit")]
        extra = " (+ preempted, requeue, resubmit on a resumed run)" if len(shown) < len(self.phases) else ""
        return f"{self.label} = {' + '.join(shown)}{extra}"


SUMS: tuple[PhaseSum, ...] = (
    PhaseSum("push_to_result_s", "push to result", (TRIGGER, *CHAIN), TRIGGER),
    PhaseSum("submit_to_result_s", "submit to result", CHAIN),
    PhaseSum("platform_overhead_s", "platform overhead", tuple(p for p in CHAIN if p != "train")),
    PhaseSum("startup_s", "start-up", ("launch", "warmup")),
    PhaseSum("time_to_train_s", "time to train", ("warmup", "train")),
)
SUM_BY_KEY = {s.key: s for s in SUMS}


def lacks(entry: dict[str, Any] | None) -> str | None:
    """ "no scheduler" (the label) when this null phase is one the kind does not have; else None."""
    if not isinstance(entry, dict) or finite(entry.get("seconds")) is not None:
        return None
    found = _LACKS.match(str(entry.get("reason") or ""))
    return found.group(1) if found else None


@dataclass(frozen=True)
class Parts:
    """One run's named sum: its total, the known phases that make it (name, seconds,
    resolution), the phases the kind does not have (name, label), the total's resolution."""

    total: float
    known: list[tuple[str, float, float]]
    lacking: list[tuple[str, str]]
    resolution: float


def parts(timeline: Any, phase_sum: PhaseSum) -> Parts | None:
    """The sum over one record's timeline, or None: no timeline, the phase it needs is not
    there, or a phase in it is unknown for a reason other than the kind not having it."""
    known: list[tuple[str, float, float]] = []
    lacking: list[tuple[str, str]] = []
    entries: list[dict[str, Any]] = []
    for phase in phase_sum.phases:
        entry = phase_entry(timeline, phase)
        if entry is None:  # not in this record: no push, no second attempt
            if phase == phase_sum.needs:
                return None
            continue
        seconds = finite(entry.get("seconds"))
        if seconds is not None:
            known.append((phase, seconds, finite(entry.get("resolution_s"), 0.0) or 0.0))
            entries.append(entry)
            continue
        label = lacks(entry)
        if label is None:
            return None
        lacking.append((phase, label))
    if not known:
        return None
    return Parts(round(sum(s for _, s, _ in known), 6), known, lacking, _resolution(timeline, entries))


def _resolution(timeline: dict[str, Any], entries: list[dict[str, Any]]) -> float:
    """The sum's clock resolution. Phases that follow one another share their marks, which
    cancel in the sum: only each unbroken stretch's first and last mark count (platform
    overhead on Slurm is submit -> first iteration plus last iteration -> collected, on
    millisecond clocks, though queue in between is read in whole seconds)."""
    by_time: dict[float, float] = {}
    for m in (timeline.get("marks") or {}).values():
        t, r = (finite(m.get(k)) for k in ("time", "resolution_s")) if isinstance(m, dict) else (None, None)
        if t is not None and r is not None:
            by_time[round(t, 6)] = max(r, by_time.get(round(t, 6), 0.0))
    total, start, end, fallback = 0.0, None, None, 0.0
    for entry in entries + [None]:
        if entry is not None and end is not None and abs(float(entry.get("start") or 0) - end) < 1e-6:
            end, fallback = float(entry["end"]), max(fallback, float(entry.get("resolution_s") or 0.0))
            continue
        if start is not None:  # a stretch ends: its two end marks' clocks (else its phases' own)
            ends = [by_time.get(round(t, 6)) for t in (start, end)]
            total += max(ends) if None not in ends else fallback  # type: ignore[type-var]
        if entry is not None:
            start, end = finite(entry.get("start")), finite(entry.get("end"))
            fallback = float(entry.get("resolution_s") or 0.0)
            if start is None or end is None:
                total, start = total + fallback, None
    return round(total, 6)


def sum_metric(key: str, fallback: Callable[[Any], float | None] | None = None) -> Callable[[Any], float | None]:
    """A catalogue function (bench.analysis.metrics.Derived) for the named sum `key`, which
    records its resolution and, where the kind lacks a phase of it, nothing else. `fallback`:
    the figure of a record with no timeline at all (collected before timelines)."""

    def value(ctx: Any) -> float | None:
        timeline = ctx.meta.get("timeline")
        if not isinstance(timeline, dict):
            return fallback(ctx) if fallback is not None else None
        found = parts(timeline, SUM_BY_KEY[key])
        if found is None:
            return None
        ctx.resolutions[key] = found.resolution
        return found.total

    return value


def phase_lacks(ctx: Any, phase: str, key: str) -> None:
    """Note on the run's figures that its kind has no `phase` ("no scheduler"), so the
    tables and charts say so where the figure is empty (`lacked`)."""
    label = lacks(phase_entry(ctx.meta.get("timeline"), phase))
    if label is not None:
        ctx.notes[key] = label


def lacked(metrics: Any, key: str) -> str | None:
    """The label ("no scheduler") when this run's `key` is empty because its kind has no such phase."""
    note = metrics.notes.get(key) if metrics.values.get(key) is None else None
    return note if isinstance(note, str) and _LACKS.fullmatch(note) else None


def env_lacked(runs: list[Any], env: str, key: str) -> str | None:
    """The label when every compared run of `env` lacks `key`'s phase for the same reason."""
    labels = {lacked(m, key) for m in runs if m.env == env}
    return labels.pop() if len(labels) == 1 and None not in labels else None


def env_clock(runs: list[Any], env: str, key: str) -> float | None:
    """The coarsest clock resolution among `env`'s runs for `key` (None: not a timed span)."""
    found = [m.resolutions[key] for m in runs if m.env == env and key in m.resolutions]
    return max(found) if found else None


def total_key(runs: list[Any], env: str) -> str:
    """The whole trip of `env`: push to result where every run of it came from a push, else submit to result."""
    mine = [m for m in runs if m.env == env]
    pushed = mine and all(m.values.get("push_to_result_s") is not None for m in mine)
    return "push_to_result_s" if pushed else "submit_to_result_s"


@dataclass(frozen=True)
class MedianRun:
    """The run of an environment whose whole trip is the median (of an even count, the lower
    middle one): the timeline chart draws its phases, which add up to its total, where
    medians of phases taken one by one need not add up to the median total."""

    env: str
    run_id: str
    key: str  # the total it was chosen by
    total: float
    low: float  # the spread of that total over the environment's runs
    high: float
    q1: float
    q3: float
    runs: int


def median_run(runs: list[Any], env: str) -> MedianRun | None:
    """`env`'s median run by its whole trip, with that total's min, max and quartiles; None
    when no run of it has the total (an unknown phase in every run)."""
    key = total_key(runs, env)
    ranked = sorted((m.values[key], m.run_id) for m in runs if m.env == env and m.values.get(key) is not None)
    if not ranked:
        return None
    total, run_id = ranked[(len(ranked) - 1) // 2]
    values = np.asarray([v for v, _ in ranked], dtype=float)
    q1, q3 = (float(q) for q in np.percentile(values, [25, 75]))
    return MedianRun(env, run_id, key, total, float(values.min()), float(values.max()), q1, q3, len(ranked))


def sum_of_medians(medians: dict[str, float | None], key: str) -> float | None:
    """The phases' medians added up as the named sum `key` adds its phases (None when none is known)."""
    known = [v for p, v in medians.items() if p in SUM_BY_KEY[key].phases and v is not None]
    return sum(known) if known else None
