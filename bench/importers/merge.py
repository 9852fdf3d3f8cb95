"""Several files of one run into one time-indexed table per host.

Files with a time column are joined on time (outer join: a row holds what was sampled
at that moment, nothing is interpolated). Files without one are placed by row number
and interval from the first timed sample (or the map's/`--start` time), and say so in
`run.json`; with nothing timed at all the clock is relative (seconds from 0) and the
record has no start date.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pandas as pd

from bench.bounded_read import read_bounded
from bench.errors import AtlasError
from bench.importers.series import GPU_FIELD_UNITS, HOST_COLUMNS, MAX_IMPORT_BYTES, ImportFault, Series, is_gpu_column

UNKNOWN_HOST = "unknown-host"


@dataclass
class Merged:
    hosts: dict[str, pd.DataFrame]
    host_known: bool
    absolute_clock: bool
    gpus_sampled: list[int]
    gpus_job: list[int] | None
    sources: list[dict[str, Any]] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    gpu_facts: dict[int, dict[str, Any]] = field(default_factory=dict)


def _hosts(series: list[Series], host: str | None) -> tuple[list[str], bool]:
    if host:
        return [host] * len(series), True
    named = sorted({s.host for s in series if s.host})
    if len(named) > 1 and any(not s.host for s in series):
        nameless = next(s.source for s in series if not s.host)
        raise AtlasError(
            f"{nameless} names no host and the other files name several ({', '.join(named)}): "
            "import each host's files with --host NAME"
        )
    fallback = named[0] if named else UNKNOWN_HOST
    return [s.host or fallback for s in series], bool(named)


def _origin(series: list[Series], start: float | None) -> tuple[float, bool]:
    firsts = [float(s.frame["time"].min()) for s in series if s.timed and len(s.frame)]
    if firsts:
        return min(firsts), True
    if start is not None:
        return start, True
    starts = [s.facts["start"] for s in series if "start" in s.facts]
    return (min(starts), True) if starts else (0.0, False)


def place_in_time(s: Series, origin: float, absolute: bool = True) -> tuple[pd.DataFrame, str]:
    """The series with a `time` column, and how its time was found (for run.json)."""
    if s.timed:
        return s.frame, "from the file"
    if not s.interval_s or s.interval_s <= 0:
        raise ImportFault(
            s.source,
            None,
            "has no time column: pass --interval S, the seconds between its samples "
            "(nvidia-smi -l S, dcgmi dmon -d MS/1000, the scrape period)",
        )
    t0 = s.facts.get("start", origin)
    frame = s.frame.copy()
    frame.insert(0, "time", t0 + frame.pop("sample") * s.interval_s)
    at = datetime.fromtimestamp(t0, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC") if absolute else "0 s (no date)"
    return frame, f"aligned by row ({s.untimed_why}): sample i at {at} + i x {s.interval_s:g} s"


def ordered_columns(columns: list[str]) -> list[str]:
    """time, host columns in the contract's order, then GPU columns by GPU and field."""
    gpu_cols = sorted(
        (c for c in columns if is_gpu_column(c)),
        key=lambda c: (int(c[3:].partition("_")[0]), list(GPU_FIELD_UNITS).index(c.partition("_")[2])),
    )
    return ["time", *(c for c in HOST_COLUMNS if c in columns), *gpu_cols]


def _source(s: Series, host: str | None, frame: pd.DataFrame, how: str) -> dict[str, Any]:
    """What run.json says about one imported file."""
    return {
        "file": s.source.name,
        "sha256": hashlib.sha256(read_bounded(s.source, MAX_IMPORT_BYTES, "one file to import")).hexdigest(),
        "format": s.format,
        "host": host,
        "rows": int(len(frame)),
        "interval_s": _median_step(frame),
        "time": how,
        "columns": sorted(frame.columns[1:]),
        "ignored": s.ignored,
        "notes": list(s.notes),
    }


def _median_step(frame: pd.DataFrame) -> float | None:
    steps = np.diff(np.unique(frame["time"].to_numpy(dtype=float)))
    return round(float(np.median(steps)), 3) if steps.size else None


def _join(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Outer join on time (ms): one row per distinct time, each column's first value."""
    df = pd.concat(frames, ignore_index=True)
    df["time"] = df["time"].round(3)
    df = df.groupby("time", sort=True).first().reset_index()
    return df[ordered_columns(list(df.columns))]


def _check_gpus(gpus: list[int] | None, sampled: list[int]) -> None:
    unknown = [g for g in gpus or [] if g not in sampled]
    if unknown:
        raise AtlasError(
            f"--gpus names GPU(s) {', '.join(map(str, unknown))} that no file sampled "
            f"(sampled: {', '.join(map(str, sampled)) or 'none'})"
        )


def merge(
    series: list[Series], host: str | None = None, gpus: list[int] | None = None, start: float | None = None
) -> Merged:
    hosts, host_known = _hosts(series, host)
    origin, absolute = _origin(series, start)
    frames: dict[str, list[pd.DataFrame]] = {}
    sources: list[dict[str, Any]] = []
    facts: dict[str, Any] = {}
    gpu_facts: dict[int, dict[str, Any]] = {}
    owners: dict[tuple[str, str], list[int]] = {}
    for i, (s, h) in enumerate(zip(series, hosts)):
        frame, how = place_in_time(s, origin, absolute or "start" in s.facts)
        frames.setdefault(h, []).append(frame)
        for col in frame.columns[1:]:
            owners.setdefault((h, col), []).append(i)
        sources.append(_source(s, h if host_known else None, frame, how))
        facts.update({k: v for k, v in s.facts.items() if k != "start" and k not in facts})
        for g, f in s.gpu_facts.items():
            gpu_facts[g] = {**f, **gpu_facts.get(g, {})}
    for (_, col), files in owners.items():
        for i in files[1:] if len(files) > 1 else []:
            sources[i]["notes"].append(
                f"{col} is also in {sources[files[0]]['file']}: at equal times that file's value is kept"
            )
    merged_hosts = {h: _join(fs) for h, fs in frames.items()}
    sampled = sorted(
        {int(c[3:].partition("_")[0]) for df in merged_hosts.values() for c in df.columns if is_gpu_column(c)}
    )
    _check_gpus(gpus, sampled)
    return Merged(merged_hosts, host_known, absolute, sampled, gpus, sources, facts, gpu_facts)
