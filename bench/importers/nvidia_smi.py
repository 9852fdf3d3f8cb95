"""`nvidia-smi --query-gpu=... --format=csv[,nounits] [-l S]` output.

    timestamp, index, utilization.gpu [%], memory.used [MiB], memory.total [MiB], power.draw [W]
    2024/03/14 23:59:51.123, 0, 31 %, 10240 MiB, 40960 MiB, 65.43 W

One row per GPU per sample; with `nounits` the values have no unit but the header still
does. Without `timestamp`, samples are numbered and placed `--interval` seconds apart
(nvidia-smi's `-l`). Query names and their meaning: `nvidia-smi --help-query-gpu`
(https://docs.nvidia.com/deploy/nvidia-smi/). `[N/A]` and `[Not Supported]` stay empty.
"""

from __future__ import annotations

import csv
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from bench.importers.sanitize import gpu_index
from bench.importers.series import (
    GPU_FIELD_UNITS,
    ImportFault,
    ParseOptions,
    Series,
    gpu_frame,
    group_samples,
    local_to_unix,
    number,
    read_import_text,
    zone,
)
from bench.importers.units import unit_factor

# nvidia-smi query field -> DCGM field of the record.
QUERY_FIELDS = {
    "utilization.gpu": "DCGM_FI_DEV_GPU_UTIL",
    "utilization.memory": "DCGM_FI_DEV_MEM_COPY_UTIL",
    "memory.used": "DCGM_FI_DEV_FB_USED",
    "memory.total": "DCGM_FI_DEV_FB_TOTAL",
    "power.draw": "DCGM_FI_DEV_POWER_USAGE",
    "power.draw.instant": "DCGM_FI_DEV_POWER_USAGE",
    "temperature.gpu": "DCGM_FI_DEV_GPU_TEMP",
    "clocks.sm": "DCGM_FI_DEV_SM_CLOCK",
    "clocks.current.sm": "DCGM_FI_DEV_SM_CLOCK",
}
FACT_FIELDS = {"name": "model", "uuid": "uuid", "driver_version": "driver", "gpu_name": "model", "gpu_uuid": "uuid"}
MISSING = {"", "[N/A]", "N/A", "[Not Supported]", "[Unknown Error]", "[Requested functionality has been deprecated]"}
HEAD_RE = re.compile(r"^(?P<name>[^\[]+?)\s*(?:\[(?P<unit>[^\]]+)\])?$")
TIME_FORMATS = (
    "%Y/%m/%d %H:%M:%S.%f",
    "%Y/%m/%d %H:%M:%S",
    "%Y-%m-%d %H:%M:%S.%f",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%dT%H:%M:%S.%f",
    "%Y-%m-%dT%H:%M:%S",
)


def _timestamp(text: str, path: Path, no: int) -> datetime:
    for fmt in TIME_FORMATS:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    raise ImportFault(path, no, f"timestamp {text!r} is not 'YYYY/MM/DD HH:MM:SS.mmm' as nvidia-smi prints it")


def _value(text: str, unit: str | None, target: str, path: Path, no: int, what: str) -> float | None:
    text = text.strip()
    if text in MISSING:
        return None
    parts = text.split()
    shown = parts[1] if len(parts) == 2 else unit
    if len(parts) > 2:
        raise ImportFault(path, no, f"{what}: {text!r} is not a number with a unit")
    value = number(parts[0], path, no, what)
    if shown and shown != target:
        factor = unit_factor(shown, target)
        if factor is None:
            raise ImportFault(path, no, f"{what}: unit {shown!r} does not convert to {target}")
        value *= factor
    return value


ID_COLUMNS = ("index", "uuid", "pci.bus_id")
Row = tuple[int, dict[str, float | None], float | None]  # (GPU, DCGM field -> value, time)


def _header(path: Path, header: list[str] | None) -> list[tuple[str, str | None]]:
    """(query name, unit) per column: `memory.used [MiB]` -> ("memory.used", "MiB")."""
    if header is None:
        raise ImportFault(path, None, "empty file (expected the CSV header of nvidia-smi --query-gpu)")
    heads = []
    for h in header:
        m = HEAD_RE.match(h.strip())
        heads.append((m["name"].strip(), m["unit"]) if m else (h.strip(), None))
    if not any(n in QUERY_FIELDS for n, _ in heads):
        raise ImportFault(
            path,
            1,
            "no GPU metric in the header (expected e.g. utilization.gpu [%], memory.used "
            "[MiB]); was it written with --query-gpu=... --format=csv?",
        )
    return heads


def _rows(
    path: Path, reader: Any, heads: list[tuple[str, str | None]], series: Series, opts: ParseOptions
) -> list[Row]:
    names = [n for n, _ in heads]
    id_col = next((n for n in ID_COLUMNS if n in names), None)
    tz = zone(opts.timezone)
    ids: dict[str, int] = {}
    parsed: list[Row] = []
    for no, row in enumerate(reader, 2):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(heads):
            raise ImportFault(path, no, f"{len(row)} fields where the header has {len(heads)}")
        cells = {n: c.strip() for n, c in zip(names, row)}
        key = cells[id_col] if id_col else "0"
        gpu = (
            gpu_index(number(key, path, no, "index"), path, no, "index")
            if id_col == "index"
            else ids.setdefault(key, len(ids))
        )
        t = local_to_unix(_timestamp(cells["timestamp"], path, no), tz) if series.timed else None
        values = {}
        for (name, unit), text in zip(heads, row):
            if name in QUERY_FIELDS:
                target = GPU_FIELD_UNITS[QUERY_FIELDS[name]]
                values[QUERY_FIELDS[name]] = _value(text, unit, target, path, no, name)
            elif name in FACT_FIELDS and text.strip() not in MISSING:
                series.gpu_facts.setdefault(gpu, {})[FACT_FIELDS[name]] = text.strip()
        parsed.append((gpu, values, t))
    if not parsed:
        raise ImportFault(path, None, "no sample rows after the header")
    if id_col is None:
        series.notes.append("no index/uuid column: every row is taken as GPU 0")
        if series.timed and len({p[2] for p in parsed}) < len(parsed):
            raise ImportFault(
                path,
                None,
                "rows share timestamps but there is no index column to tell the GPUs apart; add index to --query-gpu",
            )
    return parsed


def parse(path: Path, opts: ParseOptions) -> Series:
    path = Path(path)
    lines = read_import_text(path).splitlines()
    reader = csv.reader(lines, skipinitialspace=True)
    heads = _header(path, next(reader, None))
    names = [n for n, _ in heads]
    series = Series(
        source=path, format="nvidia-smi", frame=pd.DataFrame(), timed="timestamp" in names, interval_s=opts.interval_s
    )
    series.ignored = sorted(
        n for n in names if n not in QUERY_FIELDS and n not in FACT_FIELDS and n not in ("timestamp", *ID_COLUMNS)
    )
    parsed = _rows(path, reader, heads, series, opts)
    samples = group_samples([gpu for gpu, _, _ in parsed])
    rows, times = [], {}
    for sample, (gpu, values, t) in zip(samples, parsed):
        if t is not None:
            times.setdefault(sample, t)  # the sample's first row: one sample, one record row
        rows.extend((sample, gpu, name, value) for name, value in values.items() if value is not None)
    series.frame = gpu_frame(rows, times if series.timed else None)
    for gpu, facts in series.gpu_facts.items():
        col = f"gpu{gpu}_DCGM_FI_DEV_FB_TOTAL"
        if col in series.frame and series.frame[col].notna().any():
            facts["memory_total_mib"] = int(series.frame[col].max())
    return series
