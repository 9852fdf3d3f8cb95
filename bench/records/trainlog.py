"""Reading `train.jsonl` (the workload's log, contract in workflows/biggan/README.md).

A killed job leaves a last line without its newline, and a resumed run holds several
`run_start ... run_stop` segments; both are normal, and both are handled here once.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.records import strict_numbers
from bench.records.jobfiles import read_bytes
from bench.records.strict_numbers import LATEST_TIME, finite

if TYPE_CHECKING:  # numpy is imported where a figure is computed: `bench status` reads logs without it
    import numpy as np


@dataclass
class TrainLog:
    events: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    clock_step: str | None = None  # why the log's clock cannot be trusted (events going backwards), or None
    _by_kind: dict[str, list[dict[str, Any]]] | None = field(default=None, repr=False, compare=False)
    _segments: list[Any] | None = field(default=None, repr=False, compare=False)
    _steady: dict[float, Any] = field(default_factory=dict, repr=False, compare=False)  # steady_images_per_s

    def of(self, kind: str) -> list[dict[str, Any]]:
        """Events of one kind (indexed once: a 48-hour log has 10^5 events)."""
        if self._by_kind is None:
            index: dict[str, list[dict[str, Any]]] = {}
            for e in self.events:
                index.setdefault(e["event"], []).append(e)
            self._by_kind = index
        return self._by_kind.get(kind, [])


def read_train_log(path: Path) -> TrainLog:
    """Parse complete lines; name every line that is cut off or not JSON."""
    log = TrainLog()
    try:
        data = read_bytes(Path(path))
    except FileNotFoundError:
        log.problems.append(f"{Path(path).name} is missing (no training log: images/s and time to train unknown)")
        return log
    except OSError as exc:
        log.problems.append(f"{Path(path).name} unreadable: {exc}")
        return log
    if not data.strip():
        log.problems.append(f"{Path(path).name} is empty")
        return log
    lines = data.split(b"\n")
    truncated = lines[-1] != b""
    if not truncated:
        lines = lines[:-1]
    if truncated:
        log.problems.append(
            f"{Path(path).name}: last line ({len(lines)}) is incomplete (job killed while writing?); ignored"
        )
        lines = lines[:-1]
    # Fast path: one parse of the whole file as a JSON array (a 48-hour log has 10^5
    # lines); any bad line sends us to the line-by-line path, which names it.
    # Without a number that needs the strict hooks, json's C parser alone reads the same
    # values without a Python call per number (then no value can be a NotANumber).
    parsed: list[Any] | None = None
    whole = b"[" + b",".join(lines) + b"]"
    strict = strict_numbers.needs_strict_parse(whole)
    try:
        parsed = (_loads(whole) if strict else json.loads(whole)) if lines else []
        if len(parsed) != len(lines):
            parsed = None
    except (ValueError, UnicodeDecodeError, RecursionError):
        parsed = None
    strict = strict or parsed is None
    bad = refused = backwards = 0
    first_bad = first_back = None
    latest = float("-inf")
    for number, event in enumerate(parsed if parsed is not None else map(_line_event, lines), 1):
        if (
            type(event) is dict  # the usual line, checked inline (10^5 lines): the same tests as below
            and type(event.get("event")) is str
            and type(when := event.get("time")) in (int, float)
            and 0.0 <= when <= LATEST_TIME
        ):
            pass
        elif (
            not isinstance(event, dict)
            or not isinstance(event.get("event"), str)
            or finite(event.get("time"), 0.0, LATEST_TIME) is None
        ):
            bad += 1
            first_bad = first_bad or number
            continue
        if strict:
            refused += _exclude_impossible(event)
        else:  # the usual event: its values tested inline (10^5 events), `_exclude_impossible` where one fails
            for key in NON_NEGATIVE:
                value = event.get(key)
                if value is not None and not (type(value) in (int, float) and 0 <= value <= MAX_VALUE):
                    refused += _exclude_impossible(event, strict)
                    break
        if event["time"] < latest:  # the clock went backwards: this time cannot be trusted
            backwards += 1
            first_back = first_back or number
            continue
        latest = event["time"]
        log.events.append(event)
    if bad:
        log.problems.append(f"{Path(path).name}: {bad} line(s) are not valid events (first: line {first_bad}); ignored")
    if backwards:
        log.clock_step = (
            f"{Path(path).name}: {backwards} event(s) earlier than a line before them (clock went backwards; "
            f"first: line {first_back}); excluded"
        )
        log.problems.append(log.clock_step)
    if refused:
        log.problems.append(
            f"{Path(path).name}: {refused} value(s) not finite, negative or too large (images/s, images seen, ...); "
            "excluded"
        )
    return log


# Event keys that are counts, rates or durations: never negative, never beyond this.
NON_NEGATIVE = ("images_per_s", "images_seen", "iteration", "epoch", "step_time_s", "data_time_s", "seconds")
MAX_VALUE = 1e15


def _line_event(raw: bytes) -> Any:
    """One line's event as the strict hooks read it; None where it is not JSON."""
    try:
        return _loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


def _loads(data: bytes) -> Any:
    return json.loads(
        data, parse_float=strict_numbers._float, parse_int=strict_numbers._int, parse_constant=strict_numbers._constant
    )


def _exclude_impossible(event: dict[str, Any], strict: bool = True) -> int:
    """Remove (in place) every value that cannot be a measurement; return how many.
    `strict`: the event was read with the strict hooks, so a value may be a NotANumber."""
    removed = 0
    for key in [k for k, v in event.items() if isinstance(v, strict_numbers.NotANumber)] if strict else ():
        del event[key]
        removed += 1
    for key in NON_NEGATIVE:
        value = event.get(key)
        if value is None or (type(value) in (int, float) and 0 <= value <= MAX_VALUE):  # `finite`, inlined: 10^5 events
            continue
        if finite(value, 0.0, MAX_VALUE) is None:
            del event[key]
            removed += 1
    return removed


def segments(log: TrainLog) -> list[tuple[dict[str, Any], dict[str, Any] | None, list[dict[str, Any]]]]:
    """(run_start, run_stop or None, train events) for each process start, in order."""
    if log._segments is not None:
        return log._segments
    out: list[tuple[dict[str, Any], dict[str, Any] | None, list[dict[str, Any]]]] = []
    for e in log.events:
        kind = e["event"]
        if kind == "run_start":
            out.append((e, None, []))
        elif not out:
            continue
        elif kind == "run_stop" and out[-1][1] is None:
            out[-1] = (out[-1][0], e, out[-1][2])
        elif kind == "train" and out[-1][1] is None:
            out[-1][2].append(e)
    log._segments = out
    return out


def time_to_train(log: TrainLog) -> tuple[float | None, list[str]]:
    """Sum of run_stop - run_start over segments (MLPerf). A killed segment (no run_stop)
    counts up to its last train line: that time was spent, even if the work is redone."""
    problems: list[str] = []
    total, any_done = 0.0, False
    for number, (start, stop, trains) in enumerate(segments(log), 1):
        if stop is None:
            if not trains:
                problems.append(f"segment {number} has run_start but no run_stop and no train line; not counted")
                continue
            problems.append(f"segment {number} has no run_stop (job killed?); counted up to its last train line")
            stop = trains[-1]
        span = float(stop["time"]) - float(start["time"])
        if span < 0:
            problems.append(f"segment {number} stops before it starts (times out of order); not counted")
            continue
        total += span
        any_done = True
    return (total if any_done else None), problems


def steady_images_per_s(log: TrainLog, warmup_fraction: float = 0.2) -> np.ndarray:
    """images/s of `train` lines after warm-up: the first line and the first
    `warmup_fraction` of each segment's lines are dropped (compile, cache fill), and so is
    every line marked `profiled` (its interval held the profile window's iterations).
    Computed once per log: the median and the spread of a run both read it."""
    import numpy as np

    if warmup_fraction in log._steady:
        return log._steady[warmup_fraction].copy()
    values: list[float] = []
    for _, _, trains in segments(log):
        rated = [  # one pass over the segment's lines (10^5 in 48 hours)
            (float(r), t.get("profiled") is True)
            for t in trains
            if isinstance(r := t.get("images_per_s"), (int, float)) and not isinstance(r, bool) and r > 0
        ]
        if not rated:
            continue
        skip = max(1, int(len(rated) * warmup_fraction)) if len(rated) >= 3 else 0
        values.extend([r for r, profiled in rated[skip:] if not profiled])
    log._steady[warmup_fraction] = np.asarray(values, dtype=float)
    return log._steady[warmup_fraction].copy()


def images_seen(log: TrainLog) -> float | None:
    for e in reversed(log.events):
        if e.get("event") in ("run_stop", "train"):
            value = e.get("images_seen")
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value)
    return None


def startup_s(log: TrainLog, restarts: bool = False) -> float | None:
    """Process start -> first finished iteration (`warmup` events): the first start, or the
    median over restarts. Kept apart because a cloud pod pays start-up on every restart,
    and a restart finds the compiler cache warm."""
    values = [e["warmup_s"] for e in log.of("warmup") if finite(e.get("warmup_s")) and e["warmup_s"] >= 0]
    if restarts:
        return float(statistics.median(values[1:])) if len(values) > 1 else None
    return float(values[0]) if values else None


def outcome(log: TrainLog) -> str | None:
    stops = log.of("run_stop")
    return str(stops[-1].get("status")) if stops else None


def images_series(log: TrainLog, t0: float | None) -> tuple[np.ndarray, np.ndarray]:
    """(seconds since t0, images/s) of every train line, for charts."""
    import numpy as np

    trains = log.of("train")
    if not trains:
        return np.empty(0), np.empty(0)
    base = t0 if t0 is not None else float(trains[0]["time"])
    xs, ys = [], []
    for t in trains:
        r = t.get("images_per_s")
        if isinstance(r, (int, float)) and not isinstance(r, bool):
            xs.append(float(t["time"]) - base)
            ys.append(float(r))
    return np.asarray(xs), np.asarray(ys)


def lost_iterations(log: TrainLog) -> int:
    """Iterations trained and then trained again: in each segment, those past the
    checkpoint the next segment resumed from (work a kill or preemption threw away)."""
    segs = segments(log)
    lost = 0
    for (_, stop, trains), (next_start, _, _) in zip(segs, segs[1:]):
        reached = [e.get("iteration") for e in ([*trains, stop] if stop else trains)]
        reached = [r for r in reached if isinstance(r, (int, float)) and not isinstance(r, bool)]
        resumed = next_start.get("iteration")
        if reached and isinstance(resumed, (int, float)) and not isinstance(resumed, bool):
            lost += max(0, int(max(reached)) - int(resumed))
    return lost
