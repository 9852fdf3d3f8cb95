"""Figures from each run's timeline (run.json `timeline`, bench/records/timeline.py).

Each phase's seconds, the queue wait (the queue phase), the named sums of phases
(submit to result, push to result, platform overhead: bench.analysis.time_sums) and
steady-state images/s (the `train` phase only, after warm-up). Every timed figure
records its clock resolution (`RunContext.resolutions`): a value at or below it is shown
as "≤ 1 s" and no ratio or test is computed against it (bench.analysis.compare); a phase
the kind does not have is noted ("no scheduler", `RunContext.notes`), never read as 0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from bench.analysis import time_sums as ts
from bench.records.timeline import ALL_PHASES, phase_entry
from bench.records.trainlog import images_series, segments

QUEUE_SOURCE = (
    "run.json timeline phase queue (accepted -> granted; a resumed run: the sum of its attempts'); "
    "records without a timeline: scheduler.queue_wait_s"
)


def _number(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value)
    return float(value) if ok else None


def _resolved(ctx: Any, key: str, value: float | None, resolution: Any) -> float | None:
    res = _number(resolution)
    if value is not None and res is not None:
        ctx.resolutions[key] = res
    return value


def phase_value(ctx: Any, phase: str, key: str) -> float | None:
    """One phase's seconds (None when unknown: its reason is in the record)."""
    entry = phase_entry(ctx.meta.get("timeline"), phase)
    if entry is None:
        return None
    ts.phase_lacks(ctx, phase, key)
    return _resolved(ctx, key, _number(entry.get("seconds")), entry.get("resolution_s"))


def queue_wait(ctx: Any) -> float | None:
    """The timeline's queue phase, the same cut on every kind (a bare process has none).
    A record collected before timelines: its scheduler section (every attempt's wait)."""
    if isinstance(ctx.meta.get("timeline"), dict):
        return phase_value(ctx, "queue", "queue_wait_s")  # "no scheduler" noted where the kind has none
    sched = ctx.section("scheduler")
    total = _number(sched.get("queue_wait_total_s"))
    value = total if total is not None else _number(sched.get("queue_wait_s"))
    return _resolved(ctx, "queue_wait_s", value, sched.get("queue_wait_resolution_s"))


def train_phase_rates(log: Any, timeline: Any) -> np.ndarray:
    """images/s of the train lines measured wholly inside the train phase: each line's
    interval (from the line before it, or its segment's run_start) starts at or after the
    first finished iteration, so no start-up or compile time is averaged in."""
    marks = timeline.get("marks") if isinstance(timeline, dict) else None
    first = marks.get("first_iter") if isinstance(marks, dict) else None
    start = _number(first.get("time")) if isinstance(first, dict) else None
    if start is None:
        return np.empty(0)
    firsts = _attempt_first_iters(timeline)  # a resumed run: each attempt warms up again
    rates = []
    for run_start, _, trains in segments(log):
        before = float(run_start["time"])
        later = [t for t in firsts if t >= before]
        start = max(start, min(later)) if later else start
        for line in trains:
            rate = _number(line.get("images_per_s"))
            if before >= start and rate is not None and rate > 0:
                rates.append(rate)
            before = float(line["time"])
    return np.asarray(rates, dtype=float)


def _attempt_first_iters(timeline: Any) -> list[float]:
    """The first_iter mark of each attempt of a resumed run ([] for one attempt)."""
    found = []
    for attempt in timeline.get("attempts") or () if isinstance(timeline, dict) else ():
        first = attempt.get("marks", {}).get("first_iter") if isinstance(attempt, dict) else None
        value = _number(first.get("time")) if isinstance(first, dict) else None
        if value is not None:
            found.append(value)
    return sorted(found)


def first_iteration_time(meta: dict[str, Any], log: Any) -> float | None:
    """When the first iteration finished: the timeline's first_iter mark, else the first
    `warmup` event; None (the chart then starts at the first train line)."""
    marks = meta.get("timeline", {}).get("marks") if isinstance(meta.get("timeline"), dict) else None
    first = marks.get("first_iter") if isinstance(marks, dict) else None
    if isinstance(first, dict) and _number(first.get("time")) is not None:
        return float(first["time"])
    warmups = log.of("warmup")
    return float(warmups[0]["time"]) if warmups else None


def images_since_first_iteration(run: Any) -> tuple[np.ndarray, np.ndarray]:
    """(seconds since the first finished iteration, images/s): every environment's line
    starts where its training did, whatever its start-up took."""
    return images_series(run.train, first_iteration_time(run.meta, run.train))


def steady_images_per_s(ctx: Any) -> float | None:
    rates = train_phase_rates(ctx.run.train, ctx.meta.get("timeline"))
    return float(np.median(rates)) if rates.size else None


def catalogue(metric: Callable[..., Any], derived: Callable[..., Any], higher: str, lower: str) -> tuple[Any, ...]:
    """The catalogue's timeline entries (bench.analysis.metrics.METRICS), in summary order."""
    phases = tuple(
        metric(
            f"phase_{phase}_s",
            f"phase: {phase}",
            "s",
            lower,
            derived(lambda ctx, p=phase: phase_value(ctx, p, f"phase_{p}_s"), f"run.json timeline phase {phase}"),
            in_summary=False,
        )
        for phase in ALL_PHASES
    )
    return (
        metric(
            "submit_to_result_s",
            "submit to result",
            "s",
            lower,
            derived(ts.sum_metric("submit_to_result_s"), ts.SUM_BY_KEY["submit_to_result_s"].formula()),
            in_runs_table=True,
            headline=True,
        ),
        metric(
            "push_to_result_s",
            "push to result",
            "s",
            lower,
            derived(ts.sum_metric("push_to_result_s"), ts.SUM_BY_KEY["push_to_result_s"].formula()),
            headline=True,
        ),
        metric(
            "platform_overhead_s",
            "platform overhead",
            "s",
            lower,
            derived(ts.sum_metric("platform_overhead_s"), ts.SUM_BY_KEY["platform_overhead_s"].formula()),
            headline=True,
        ),
        metric(
            "images_per_s_train_phase",
            "images/s, train phase after warm-up (median)",
            "img/s",
            higher,
            derived(steady_images_per_s, "train.jsonl train lines inside the timeline's train phase"),
        ),
        *phases,
    )
