"""Checks of a run record beyond its JSON Schema: what a number downstream relies on.

`load_run` runs them on every record it reads, so `bench check`, `bench compare` and
`bench report` see the same problems. Each problem is one line naming the file and what
is wrong; none raises. The checks: files the record names are present, sample time only
moves forward, the config hash is there for a finished run, values are in plausible
units (each column within its catalogue row's range, bench.records.columns; GPU memory
used within its total),
and times agree with each other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bench.records.columns import column_of
from bench.records.contract import FINISHED_OK, GPU_ENERGY, RUN_JSON, TRAIN_JSONL
from bench.records.energy_counter import counter_energy_wh
from bench.records.sampling import first_start, gap_problems
from bench.records.strict_numbers import finite

TIME_SLACK_S = 5.0


def _section(meta: dict[str, Any], key: str) -> dict[str, Any]:
    value = meta.get(key)
    return value if isinstance(value, dict) else {}


def meta_problems(meta: dict[str, Any], run_dir: Path, collected: bool) -> list[str]:
    """Problems of `run.json` itself: config hash, times, named files, frozen facts."""
    out: list[str] = []
    status = _section(meta, "exit").get("status")
    if status in FINISHED_OK and not meta.get("config_sha256"):
        out.append(
            f"{RUN_JSON}: config_sha256 is missing for a finished run (which configuration it trained is unknown)"
        )
    if _section(meta, "exit").get("rebuilt"):
        out.append(f"{RUN_JSON}: exit rebuilt at collect ({_section(meta, 'exit')['rebuilt']})")
    start, end = finite(meta.get("start_time")), finite(meta.get("end_time"))
    if start is not None and end is not None and end < start:
        out.append(f"{RUN_JSON}: end_time {end} is before start_time {start}")
    sched = _section(meta, "scheduler")
    submit, sched_start = finite(sched.get("submit_time")), finite(sched.get("start_time"))
    if submit is not None and sched_start is not None and sched_start + TIME_SLACK_S < submit:
        out.append(f"{RUN_JSON}: scheduler.start_time {sched_start} is before submit_time {submit}")
    named = meta.get("samples_file")
    if isinstance(named, str) and named and not (run_dir / named).is_file():
        out.append(f"{RUN_JSON} names samples file {named!r}, which is missing")
    if status and status != "running" and not (run_dir / TRAIN_JSONL).is_file():
        out.append(f"{TRAIN_JSONL} is missing (no training log: no time to train or images/s)")
    if collected and "environment" not in meta:
        out.append(
            f"{RUN_JSON} has no 'environment' facts (collected by an older bench): cost and hardware shape unknown"
        )
    return out


def _out_of_range(values: np.ndarray, low: float | None, high: float | None) -> np.ndarray:
    ok = np.isfinite(values)
    bad = np.zeros(values.shape, dtype=bool)
    if low is not None:
        bad |= ok & (values < low)
    if high is not None:
        bad |= ok & (values > high)
    return bad


def _col(df: pd.DataFrame, name: str) -> np.ndarray | None:
    return df[name].to_numpy(dtype=float, na_value=np.nan) if name in df.columns else None


def samples_problems(name: str, df: pd.DataFrame, meta: dict[str, Any]) -> list[str]:
    """Problems of one samples table: time order and span, values out of their units' range.

    A value out of its unit's range is set to NaN in `df` (in place): named here, never shown.
    """
    out: list[str] = []
    t = df["time"].to_numpy(dtype=float)
    backwards = int((np.diff(t) < 0).sum())
    if backwards:
        out.append(f"{name}: sample time goes backwards {backwards} time(s) (clock stepped, or rows mixed up)")
    start, end = first_start(meta), finite(meta.get("end_time"))  # a resumed run's samples begin at its first attempt
    if len(t) and start is not None and t[0] < start - TIME_SLACK_S:
        out.append(f"{name}: first sample at {t[0]:.3f} is before the run started ({start:.3f})")
    if len(t) and end is not None and t[-1] > end + TIME_SLACK_S:
        out.append(f"{name}: last sample at {t[-1]:.3f} is after the run ended ({end:.3f})")
    out.extend(gap_problems(name, t, meta))
    hw = _section(meta, "hardware")
    cores = finite(hw.get("cpu_cores_logical"))
    bounds: list[tuple[str, float | None, float | None, str]] = []
    for column in df.columns:  # each column held to its catalogue row's range (bench.records.columns)
        row = column_of(str(column))
        if row is None or (row.low is None and row.high is None):
            continue
        high = row.high
        if row.high_per_core:  # % of one core summed over a tree: the bound scales with the cores
            high = (high * cores + 5.0) if (high is not None and cores) else None
        prefix = f"{str(column).split('_', 1)[0]} " if row.source == "nvml" else ""
        bounds.append((str(column), row.low, high, prefix + row.what))
    gpus = sorted({c.split("_", 1)[0] for c in df.columns if c.startswith("gpu") and "_DCGM_" in c})
    for column, low, high, what in bounds:
        values = _col(df, column)
        if values is None:
            continue
        mask = _out_of_range(values, low, high)
        bad = int(mask.sum())
        if bad:  # named, and excluded: a report never shows an impossible value
            df.loc[mask, column] = np.nan
            span = f"{low:g}..{high:g}" if high is not None else f">= {low:g}"
            out.append(f"{name}: {bad} value(s) of {column} outside {span} ({what}): wrong units?; excluded")
    for g in gpus:
        counter = _col(df, f"{g}_{GPU_ENERGY}")
        if counter is not None and np.isfinite(counter).sum() >= 2:  # the rules the energy figure is read by
            out.extend(f"{name}: {p}" for p in counter_energy_wh(t, counter, f"{g}_{GPU_ENERGY}")[1])
        used, total = _col(df, f"{g}_DCGM_FI_DEV_FB_USED"), _col(df, f"{g}_DCGM_FI_DEV_FB_TOTAL")
        if used is not None and total is not None:
            over = int((np.isfinite(used) & np.isfinite(total) & (used > total * 1.001)).sum())
            if over:
                out.append(f"{name}: {over} row(s) where {g} memory used exceeds its total")
    return out
