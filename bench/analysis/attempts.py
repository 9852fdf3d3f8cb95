"""A run's attempts: the first job and every resume (preemption, requeue, rerun after a
kill), each a span of wall time that was paid for, whether its work was kept or not.

`bench record` keeps each earlier attempt's start and end in `previous_attempts`; an
attempt killed before its final write has no end, so it is taken as its last sample
(the recorder flushes one row per interval, so at most one interval is missed). Wall
time, GPU energy and therefore cost and GPU-hours sum over these spans; the gaps
between attempts (queued, or nothing running) are not charged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from bench.records.strict_numbers import finite


def attempt_spans(meta: dict[str, Any], samples: dict[str, pd.DataFrame]) -> list[tuple[float, float]]:
    """(start, end) of every attempt with a known start, oldest first."""
    previous = meta.get("previous_attempts") if isinstance(meta.get("previous_attempts"), list) else []
    raw = [(a.get("start_time"), a.get("end_time")) for a in previous if isinstance(a, dict)]
    raw.append((meta.get("start_time"), meta.get("end_time")))
    starts = sorted((s, e) for s, e in ((finite(s), finite(e)) for s, e in raw) if s is not None)
    times = np.sort(np.concatenate([df["time"].to_numpy(dtype=float) for df in samples.values()] or [np.empty(0)]))
    spans = []
    for i, (start, end) in enumerate(starts):
        if end is None or end < start:
            nxt = starts[i + 1][0] if i + 1 < len(starts) else np.inf
            inside = times[(times >= start) & (times < nxt)]
            end = float(inside[-1]) if inside.size else None
        if end is not None:
            if spans and start < spans[-1][1]:  # overlaps the attempt before: that time is charged once
                start = min(spans[-1][1], end)
            spans.append((start, end))
    return spans


def wall_over_attempts(spans: list[tuple[float, float]]) -> float | None:
    return float(sum(e - s for s, e in spans)) if spans else None


def per_attempt(df: pd.DataFrame, spans: list[tuple[float, float]], fn: Callable[[pd.DataFrame], float | None]):
    """`fn` over each attempt's rows of `df`, summed (a counter or an integral must not
    run across the gap between two attempts); `fn(df)` when no span is known."""
    if not spans:
        return fn(df)
    t = df["time"].to_numpy(dtype=float)
    parts = [fn(df[(t >= s) & (t <= e)]) for s, e in spans]
    known = [p for p in parts if p is not None]
    return float(sum(known)) if known else None
