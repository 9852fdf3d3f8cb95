"""What an import keeps of a file's numbers: valid values on a clock that never jumps.

Other tools' logs carry what a recorder never writes: `nan` or `150` in `%idle`, a clock
that steps back an hour (NTP) or is read as the next day, an energy counter that resets.
Every parsed series passes through `clean` before it is merged: a value that is not
finite or lies outside its unit's range is dropped (left empty, never written as 0) and
counted; a clock step is named, and the samples after it are moved to follow on at the
file's usual interval, so a step can never add wall time (nor the energy and cost
computed over it); counter resets are named (the analysis sums a counter's increases).
"""

from __future__ import annotations

import math

import numpy as np

from bench.importers.series import ImportFault, Series, is_gpu_column
from bench.records import contract as c

MAX_GPU_INDEX = 1023
MIN_INTERVAL_S, MAX_INTERVAL_S = 1e-3, 86400.0
STEP_FACTOR, STEP_MIN_S = 10.0, 300.0  # a gap over both (x the usual interval, seconds) is a clock step

# column (or GPU field) -> (low, high): the values a measurement can take
HOST_RANGES: dict[str, tuple[float, float]] = {
    "proc_cpu_percent": (0.0, 100.0 * 1e6),
    "proc_rss_bytes": (0.0, 1e18),
    "host_cpu_percent": (0.0, 100.5),
    "host_mem_used_bytes": (0.0, 1e18),
    "host_mem_total_bytes": (1.0, 1e18),
    "host_cpu_steal_percent": (0.0, 100.5),
    "host_cpu_iowait_percent": (0.0, 100.5),
    "host_net_rx_bytes_per_s": (0.0, 1e15),
    "host_net_tx_bytes_per_s": (0.0, 1e15),
    "cgroup_cpu_limit_cores": (1e-3, 1e6),
    "cgroup_mem_limit_bytes": (1.0, 1e18),
    "cgroup_mem_used_bytes": (0.0, 1e18),
}
GPU_RANGES: dict[str, tuple[float, float]] = {
    c.GPU_UTIL: (0.0, 100.0),
    c.GPU_MEM_COPY_UTIL: (0.0, 100.0),
    c.GPU_FB_USED: (0.0, 1e9),
    c.GPU_FB_TOTAL: (1.0, 1e9),
    c.GPU_POWER: (0.0, 2000.0),
    c.GPU_ENERGY: (0.0, 1e18),
    c.GPU_TEMP: (-50.0, 200.0),
    c.GPU_SM_CLOCK: (0.0, 1e5),
}


def check_interval(value: float | None, flag: str = "--interval") -> None:
    """An interval between samples that a tool can have printed at, or an AtlasError."""
    if value is None:
        return
    if not math.isfinite(value) or not MIN_INTERVAL_S <= value <= MAX_INTERVAL_S:
        raise ImportFault(
            flag,
            None,
            f"{value:g} s is not a sampling interval: give seconds between {MIN_INTERVAL_S:g} and {MAX_INTERVAL_S:g}",
        )


def gpu_index(value: float, path: object, line: int, what: str) -> int:
    """A GPU index as a tool prints it: an integer 0..1023, else an ImportFault naming the line."""
    if not math.isfinite(value) or value != int(value) or not 0 <= value <= MAX_GPU_INDEX:
        raise ImportFault(
            str(path),
            line,
            f"{what} {value:g} is not a GPU index (0..{MAX_GPU_INDEX}): the file is damaged or not this format",
        )
    return int(value)


def _range(column: str) -> tuple[float, float] | None:
    if column in HOST_RANGES:
        return HOST_RANGES[column]
    if is_gpu_column(column):
        return GPU_RANGES.get(column.partition("_")[2])
    return None


def _drop_invalid(s: Series) -> None:
    for column in [col for col in s.frame.columns if col not in ("time", "sample")]:
        values = s.frame[column].to_numpy(dtype=float, na_value=np.nan).copy()
        bounds = _range(column)
        bad = ~np.isfinite(values) & ~np.isnan(values)
        with np.errstate(invalid="ignore"):
            if bounds is not None:
                bad |= np.isfinite(values) & ((values < bounds[0]) | (values > bounds[1]))
        count = int(bad.sum())
        if count:
            values[bad] = np.nan
            s.frame[column] = values
            span = f" or outside {bounds[0]:g}..{bounds[1]:g}" if bounds else ""
            s.notes.append(f"{count} value(s) of {column} not finite{span}: dropped (left empty, not 0)")


def _fix_clock(s: Series) -> None:
    if not s.timed or "time" not in s.frame or len(s.frame) < 2:
        return
    t = s.frame["time"].to_numpy(dtype=float)
    keep = np.isfinite(t)
    if not keep.all():
        s.notes.append(f"{int((~keep).sum())} row(s) without a readable time: dropped")
        s.frame = s.frame[keep].reset_index(drop=True)
        t = t[keep]
    if len(t) < 2:
        return
    steps = np.diff(t)
    usual = float(np.median(steps[steps > 0])) if (steps > 0).any() else 1.0
    limit = max(usual * STEP_FACTOR, STEP_MIN_S)
    jumps = np.flatnonzero((steps < 0) | (steps > limit))
    if not jumps.size:
        return
    fixed = steps.copy()
    for i in jumps:
        fixed[i] = usual
        way = "back" if steps[i] < 0 else "forward"
        s.notes.append(
            f"clock stepped {way} {abs(steps[i]) / 3600:.2f} h after row {i + 1}: later samples moved to follow on "
            f"at the usual {usual:g} s (a clock step adds no wall time)"
        )
    # rebuilt from the steps (t + a shift would lose the seconds of a step of 1e20 s to rounding)
    s.frame["time"] = t[0] + np.concatenate(([0.0], np.cumsum(fixed)))


def _note_counter_resets(s: Series) -> None:
    for column in [col for col in s.frame.columns if col.endswith(c.GPU_ENERGY)]:
        values = s.frame[column].to_numpy(dtype=float, na_value=np.nan)
        values = values[np.isfinite(values)]
        resets = int((np.diff(values) < 0).sum())
        if resets:
            s.notes.append(
                f"{column}: the energy counter went back {resets} time(s) (reset): energy sums its increases"
            )


def _check_gpu_columns(s: Series) -> None:
    for column in s.frame.columns:
        head = str(column).partition("_")[0]
        if head.startswith("gpu") and head[3:].lstrip("-").isdigit():
            index = int(head[3:])
            if index < 0 or index > MAX_GPU_INDEX:
                raise ImportFault(s.source, None, f"GPU index {index} is not a GPU index (0..{MAX_GPU_INDEX})")


def clean(s: Series) -> Series:
    """The series with invalid values dropped and clock steps removed, each named in its notes."""
    _check_gpu_columns(s)
    check_interval(s.interval_s, f"{s.source}: interval")
    _fix_clock(s)
    _drop_invalid(s)
    _note_counter_resets(s)
    return s
