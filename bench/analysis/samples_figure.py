"""A metric read from one samples column (`Samples`), reduced over time and across hosts or GPUs.

Kept apart from the metric catalogue (`metrics.py`) because it is the one source that
touches the samples frames column by column; the catalogue only names which column and
which reductions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bench.records import contract as c
from bench.records.read import RunData

if TYPE_CHECKING:
    from bench.analysis.metrics import RunContext, TimeSeries


def has_values(run: RunData, column: str) -> bool:
    return any(column in df and df[column].notna().any() for df in run.samples.values())


def finite(arr: np.ndarray) -> np.ndarray:
    return arr[np.isfinite(arr)]


def number(value: Any) -> float | None:
    """A finite number, or None (bools, text and NaN are not figures)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if np.isfinite(value) else None


@dataclass(frozen=True)
class Samples:
    """A figure reduced from one samples column: over time per host or GPU, then across them.

    `per_gpu`: the column is `gpu<i>_<column>` for each of the job's GPUs (`contract.job_gpu_ids`).
    `over_time`: mean, p95 or max. `across`: sum, max or pool (all hosts' or GPUs' samples
    reduced together). `scale` converts the column's unit into the metric's.
    `host_column`: the whole machine's column to use when no host has `column` (records
    without process-tree columns, e.g. imported sar logs); the figure is then labelled
    "host". `per_core`: that column is % of all cores, so it is multiplied by
    `hardware.cpu_cores_logical` to read as % of one core (no figure when unknown).
    """

    column: str
    over_time: str = "mean"
    across: str = "sum"
    per_gpu: bool = False
    scale: float = 1.0
    host_column: str | None = None
    per_core: bool = False

    def origin(self, run: RunData) -> tuple[str, float, str] | None:
        """(column, extra factor, "process" or "host") this run's figure comes from."""
        if self.per_gpu or self.host_column is None or has_values(run, self.column):
            return self.column, 1.0, "process"
        if not has_values(run, self.host_column):
            return None
        hw = run.meta.get("hardware") if isinstance(run.meta.get("hardware"), dict) else {}
        cores = number(hw.get("cpu_cores_logical")) if self.per_core else 1.0
        return (self.host_column, cores, "host") if cores else None

    def columns(self, run: RunData, df: pd.DataFrame, column: str) -> list[str]:
        if self.per_gpu:
            return [f"{g}_{column}" for g in c.job_gpu_ids(run.meta, df.columns) if f"{g}_{column}" in df]
        return [column] if column in df else []

    def series(self, run: RunData, chart: TimeSeries) -> tuple[np.ndarray, np.ndarray]:
        """(seconds since the run's start, value) on the run's first host; GPUs combined by `chart.combine`."""
        picked = self.origin(run)
        if not run.samples or picked is None:
            return np.empty(0), np.empty(0)
        column, factor, _ = picked
        df = run.samples[sorted(run.samples)[0]]  # first host: one line per environment
        cols = self.columns(run, df, column)
        if not cols:
            return np.empty(0), np.empty(0)
        t = df["time"].to_numpy(dtype=float)
        base = run.start_time if run.start_time is not None else (t[0] if t.size else 0.0)
        stack = np.vstack([df[col].to_numpy(dtype=float, na_value=np.nan) for col in cols])
        if not self.per_gpu:
            y = stack[0]
        else:  # per sample over GPUs; NaN where no GPU has a value (np.nanmean would warn there)
            ok = np.isfinite(stack)
            total, count = np.where(ok, stack, 0.0).sum(axis=0), ok.sum(axis=0)
            y = np.full(stack.shape[1], np.nan)
            np.divide(total, 1 if chart.combine == "sum" else count, out=y, where=count > 0)
        return t - base, y * self.scale * factor

    def value(self, ctx: RunContext) -> float | None:
        run = ctx.run
        picked = self.origin(run)
        if picked is None:
            return None
        column, factor, _ = picked
        parts = [
            finite(df[col].to_numpy(dtype=float, na_value=np.nan))
            for df in run.samples.values()
            for col in self.columns(run, df, column)
        ]
        parts = [p for p in parts if p.size]
        if not parts:
            return None
        reduce = {"mean": np.mean, "max": np.max, "p95": lambda a: np.percentile(a, 95)}[self.over_time]
        if self.across == "pool":
            return float(reduce(np.concatenate(parts))) * self.scale * factor
        each = [float(reduce(p)) for p in parts]
        return (float(np.sum(each)) if self.across == "sum" else max(each)) * self.scale * factor
