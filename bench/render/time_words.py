"""Time figures in words: precision that follows the clock, and the named sums' identities.

A phase read from a 1 s clock (Slurm) is not "0.500 s": each figure is rounded to its
clock's resolution (and to the catalogue's significant digits, whichever is coarser), and
one at or below the resolution reads "≤ 1 s". The identities ("start-up 7.50 s = launch
0.500 + warmup 7.00") are shown once, in "Where the time goes", from each environment's
median run (bench.analysis.time_sums), so their numbers add up.
"""

from __future__ import annotations

import math
from typing import Any

from bench.analysis import time_sums as ts
from bench.analysis.metrics import fmt
from bench.render.escape import code, md

DIGITS = 3


def decimals(value: float, resolution: float | None, digits: int = DIGITS) -> int:
    """Decimals for `value`: its significant digits, never finer than its clock's resolution."""
    mag = abs(value)
    by_digits = 0 if mag == 0 or mag >= 10**digits else max(0, digits - 1 - int(math.floor(math.log10(mag))))
    by_clock = max(0, math.ceil(-math.log10(resolution) - 1e-9)) if resolution and resolution > 0 else 6
    return min(by_digits, by_clock, 6)


def seconds_text(value: float | None, resolution: float | None, unit: bool = True) -> str:
    """A time for people: "—" unknown, "≤ 1 s" at or below the resolution, else rounded to the clock."""
    if value is None or value != value:
        return "—"
    tail = " s" if unit else ""
    if resolution is not None and resolution > 0 and value <= resolution:
        return f"≤ {resolution:g}{tail}"
    if resolution is None:
        return fmt(value) + tail
    return f"{value:,.{decimals(value, resolution)}f}{tail}"


def spread_text(values: list[float], resolution: float | None) -> str:
    """min–max of a figure over the runs, each end at its clock's precision ("—" under 2 runs)."""
    if len(values) < 2:
        return "—"
    low, high = (seconds_text(v, resolution, unit=False) for v in (min(values), max(values)))
    return low if low == high and low.startswith("≤") else f"{low}–{high}"


def _term(phase: str, seconds: float, resolution: float) -> str:
    return f"{phase} {seconds_text(seconds, resolution, unit=False)}"


def identity_lines(runs: list[Any], timelines: dict[tuple[str, str], Any], envs: list[str]) -> list[str]:
    """One bullet per named sum: its formula once, then per environment its median run's
    numbers (`timelines`: (env, run id) -> that record's timeline). Empty when no run has one."""
    picked = {env: found for env in envs if (found := ts.median_run(runs, env)) is not None}
    lines = []
    for phase_sum in ts.SUMS:
        cells = []
        for env, chosen in picked.items():
            parts = ts.parts(timelines.get((env, chosen.run_id)), phase_sum)
            if parts is None:
                continue
            terms = " + ".join(_term(p, s, r) for p, s, r in parts.known)
            lacking = ", ".join(f"{p}: {md(label)}" for p, label in parts.lacking)
            none = f" ({lacking})" if lacking else ""
            total = seconds_text(parts.total, parts.resolution)
            cells.append(f"{md(env)} `{code(chosen.run_id)}`: {total} = {terms}{none}")
        if cells:
            lines.append(f"**{phase_sum.formula()}**: " + " · ".join(cells))
    return lines


def medians_note(runs: list[Any], medians: dict[str, dict[str, float | None]], envs: list[str]) -> list[str]:
    """Per environment whose phase medians do not add up to its median total: both numbers, and why."""
    out = []
    for env in envs:
        chosen = ts.median_run(runs, env)
        added = ts.sum_of_medians(medians[env], chosen.key) if chosen else None
        if chosen is None or added is None or abs(added - chosen.total) < 0.0005:
            continue
        label = ts.SUM_BY_KEY[chosen.key].label
        out.append(
            f"{md(env)}: the medians of its phases add up to {fmt(added)} s, its median {label} is "
            f"{fmt(chosen.total)} s (a median of parts is not the median of the whole: the chart and the "
            "sums above use the median run, whose phases add up)."
        )
    return out
