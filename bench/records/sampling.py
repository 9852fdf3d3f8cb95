"""Sample times against a run's attempts: where the samples may start, and where they stop.

A resumed, preempted or requeued run keeps each earlier attempt in `previous_attempts`
and its samples file holds the rows of every attempt, so its first sample belongs to the
*first* attempt: the check compares with the earliest start. A stretch with no samples
inside one attempt (the recorder was stopped, e.g. `kill -STOP`, or starved of CPU) makes
every average over that attempt silently cover less than it says: it is named as a data
problem. The gap between two attempts (queued, or nothing running) is expected.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.records.strict_numbers import finite

GAP_INTERVALS = 10  # a gap of this many sample intervals ...
GAP_MIN_S = 10.0  # ... and at least this long is named


def attempt_starts(meta: dict[str, Any]) -> list[float]:
    """Start times of every attempt (earlier ones from previous_attempts), oldest first."""
    previous = meta.get("previous_attempts") if isinstance(meta.get("previous_attempts"), list) else []
    starts = [finite(a.get("start_time")) for a in previous if isinstance(a, dict)]
    starts.append(finite(meta.get("start_time")))
    return sorted(s for s in starts if s is not None)


def first_start(meta: dict[str, Any]) -> float | None:
    """When the run's first attempt started: where its samples may begin."""
    starts = attempt_starts(meta)
    return starts[0] if starts else None


def gap_problems(name: str, t: np.ndarray, meta: dict[str, Any]) -> list[str]:
    """Stretches without samples inside one attempt, each named with its span."""
    if len(t) < 3:
        return []
    steps = np.diff(t)
    interval = finite(meta.get("sample_interval_s"))
    if interval is None:
        interval = float(np.median(steps[steps > 0])) if (steps > 0).any() else 1.0
    limit = max(GAP_INTERVALS * interval, GAP_MIN_S)
    starts = np.array(attempt_starts(meta)[1:])  # a later attempt's start inside a gap: the gap is between attempts
    out = []
    for i in np.flatnonzero(steps > limit):
        a, b = float(t[i]), float(t[i + 1])
        if starts.size and ((starts > a) & (starts <= b + GAP_MIN_S)).any():
            continue
        out.append(
            f"{name}: no samples for {b - a:.1f} s ({a:.3f} to {b:.3f}) inside one attempt "
            f"(the recorder was stopped or starved): a data problem; averages over it cover less time"
        )
    return out
