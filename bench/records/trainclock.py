"""Does the training log's clock agree with the run's? Time to train is only as good as it.

train.jsonl times come from the job's clock; run.json's start and end from the
recorder's. A clock step inside the job (NTP, a VM migrated) moves train.jsonl's times
and would turn a 30 s job into an hour of "time to train". So time to train is refused,
with the reason, when the log's events lie outside the run's attempts, go backwards,
add up to more than the wall time, or span no time at all.
"""

from __future__ import annotations

from typing import Any

from bench.records.contract import TRAIN_JSONL
from bench.records.strict_numbers import finite
from bench.records.trainlog import TrainLog, time_to_train

SLACK_S = 5.0  # recorder start -> workload start, and clocks read a moment apart


def attempt_spans(meta: dict[str, Any]) -> list[tuple[float | None, float | None]]:
    """(start, end) of each attempt run.json names (earlier ones, then this one); None where
    a time is not a finite number. Read once here for the train clock and the range checks."""
    previous = meta.get("previous_attempts")
    raw = [a for a in previous if isinstance(a, dict)] if isinstance(previous, list) else []
    return [(finite(a.get("start_time")), finite(a.get("end_time"))) for a in [*raw, meta]]


def _times(train: TrainLog) -> Any:
    """The events' times that are finite numbers, in order, as a numpy array (a 48-hour log
    has 10^5 events: one pass, `finite` per event only where one is not a plain number)."""
    import numpy as np

    raw = [e.get("time") for e in train.events]
    if all(type(t) in (int, float) for t in raw):
        try:
            times = np.asarray(raw, dtype=float)
            if np.isfinite(times).all():
                return times
        except OverflowError:  # an integer beyond any float
            pass
    return np.asarray([n for t in raw if (n := finite(t)) is not None], dtype=float)


def train_clock_refusal(train: TrainLog, meta: dict[str, Any]) -> str | None:
    """Why time to train cannot be trusted for this run (one line), or None when it can."""
    times = _times(train)
    if not len(times) or not train.of("run_start"):
        return None
    if bool((times[1:] < times[:-1] - SLACK_S).any()):
        return f"{TRAIN_JSONL}: event times go backwards (the job's clock stepped); time to train excluded"
    spans = attempt_spans(meta)
    starts = [s for s, _ in spans if s is not None]
    ends = [e for _, e in spans if e is not None]
    if starts and float(times.min()) < min(starts) - SLACK_S or ends and float(times.max()) > max(ends) + SLACK_S:
        return (
            f"{TRAIN_JSONL}: event times lie outside the run's start..end in run.json "
            "(the job's clock stepped, or the log belongs to another run); time to train excluded"
        )
    total, _ = time_to_train(train)
    if total is not None and total <= 0 and train.of("train"):
        return f"{TRAIN_JSONL}: run_start and run_stop carry the same time (clock not read?); time to train excluded"
    wall = sum(e - s for s, e in spans if s is not None and e is not None and e >= s)
    if total is not None and all(s is not None and e is not None for s, e in spans) and total > wall + SLACK_S:
        return (
            f"{TRAIN_JSONL}: time to train {total:.1f} s exceeds the job's wall time {wall:.1f} s "
            "(the job's clock stepped?); time to train excluded"
        )
    return None
