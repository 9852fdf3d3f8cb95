"""Any CSV (a spreadsheet's export) with a mapping file that says what its columns are.

    # MAP.yaml
    time: {column: "Time", format: "%d.%m.%Y %H:%M:%S"}   # or unix / unix_ms / iso
    # interval_s: 5          # instead of time: a file without a time column
    # start: "2024-03-14 09:00:00"   # optional with interval_s: the first row's time
    host: node17
    csv: {delimiter: ";", decimal: ","}
    columns:
      "CPU busy (%)": {to: host_cpu_percent}
      "RAM used (GB)": {to: host_mem_used_bytes, unit: GB}
      "GPU0 util": {to: gpu0_DCGM_FI_DEV_GPU_UTIL, unit: fraction}
      "GPU0 board power": {to: gpu0_DCGM_FI_DEV_POWER_USAGE, unit: W, scale: 1.0}
    hardware: {cpu_cores_logical: 32}

A value is multiplied by `scale` (default 1), then converted from `unit` to the record
column's unit (bench/README.md). Columns not named in `columns` are left out (listed in
run.json); a named column that is not in the file is an error.
"""

from __future__ import annotations

import csv
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pandas as pd

from bench.importers.dcgm_names import record_column
from bench.importers.series import (
    ImportFault,
    ParseOptions,
    Series,
    column_unit,
    local_to_unix,
    number,
    unit_factor,
    zone,
)

HARDWARE_KEYS = ("cpu_model", "cpu_cores_logical", "cpu_cores_physical", "memory_bytes")


def _map_error(opts: ParseOptions, key: str, problem: str) -> ImportFault:
    return ImportFault(opts.map_path or "MAP.yaml", None, f"{key}: {problem}")


def _column_specs(mapping: dict[str, Any], opts: ParseOptions) -> dict[str, tuple[str, float]]:
    """source column -> (record column, factor to the record's unit)."""
    cols = mapping.get("columns")
    if not isinstance(cols, dict) or not cols:
        raise _map_error(
            opts,
            "columns",
            'missing: map at least one CSV column to a record column, e.g. columns: {"CPU %": {to: host_cpu_percent}}',
        )
    out: dict[str, tuple[str, float]] = {}
    for src, spec in cols.items():
        spec = {"to": spec} if isinstance(spec, str) else spec
        if not isinstance(spec, dict) or not isinstance(spec.get("to"), str):
            raise _map_error(opts, f"columns.{src}", "needs 'to: <record column>'")
        target = record_column(spec["to"])  # a DCGM 4.6 field name as the record names it
        record_unit = column_unit(target)
        if record_unit is None:
            raise _map_error(
                opts,
                f"columns.{src}.to",
                f"{target!r} is not a record column (e.g. host_cpu_percent, "
                "host_mem_used_bytes, gpu0_DCGM_FI_DEV_GPU_UTIL; see bench/README.md)",
            )
        scale = spec.get("scale", 1)
        if isinstance(scale, bool) or not isinstance(scale, (int, float)):
            raise _map_error(opts, f"columns.{src}.scale", f"{scale!r} is not a number")
        unit = str(spec.get("unit", record_unit))
        factor = unit_factor(unit, record_unit)
        if factor is None:
            raise _map_error(
                opts, f"columns.{src}.unit", f"{unit!r} does not convert to {record_unit} (the unit of {target})"
            )
        out[str(src)] = (target, float(scale) * factor)
    return out


def _iso(text: str, tz: ZoneInfo) -> float:
    """ISO 8601; a time without an offset is local time in --timezone."""
    moment = datetime.fromisoformat(text)
    return moment.timestamp() if moment.tzinfo else local_to_unix(moment, tz)


def _time_reader(mapping: dict[str, Any], opts: ParseOptions) -> tuple[str | None, Any]:
    spec = mapping.get("time")
    if spec is None:
        interval = mapping.get("interval_s", opts.interval_s)
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) or interval <= 0:
            raise _map_error(
                opts, "time", "missing: give time: {column, format} or interval_s for a file without a time column"
            )
        return None, None
    if not isinstance(spec, dict) or not isinstance(spec.get("column"), str):
        raise _map_error(opts, "time", "needs column: <name> and format: <strptime format | unix | unix_ms | iso>")
    fmt = str(spec.get("format", "iso"))
    tz = zone(opts.timezone)
    if fmt == "unix":
        return spec["column"], float
    if fmt == "unix_ms":
        return spec["column"], lambda s: float(s) / 1000.0
    if fmt == "iso":
        return spec["column"], lambda s: _iso(s, tz)
    if not any(d in fmt for d in DATE_DIRECTIVES):  # strptime would date every row 1900-01-01
        raise _map_error(
            opts,
            "time",
            f"format {fmt!r} of column {spec['column']!r} has no date (only a time of day): give a format with the "
            "date (e.g. '%Y-%m-%d %H:%M:%S') if the column has one, else leave time: out and give interval_s "
            "with start: 'YYYY-MM-DD HH:MM:SS'",
        )
    return spec["column"], lambda s: local_to_unix(datetime.strptime(s, fmt), tz)


DATE_DIRECTIVES = ("%d", "%j", "%c", "%x", "%s", "%G")  # a strptime format that names the day


def _rows(
    path: Path,
    reader: Any,
    header: list[str],
    specs: dict[str, tuple[str, float]],
    time_col: str | None,
    to_time: Any,
    decimal: str,
) -> list[dict[str, float]]:
    """Each data row as record column -> value (and time), in the record's units."""
    rows: list[dict[str, float]] = []
    for no, row in enumerate(reader, 2):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise ImportFault(path, no, f"{len(row)} fields where the header has {len(header)}")
        cells = dict(zip(header, (c.strip() for c in row)))
        out: dict[str, float] = {}
        if time_col:
            try:
                out["time"] = to_time(cells[time_col])
            except ValueError:
                raise ImportFault(path, no, f"time {cells[time_col]!r} does not match the map's time format") from None
        for src, (target, factor) in specs.items():
            text = cells[src].replace(decimal, ".") if decimal != "." else cells[src]
            if text not in ("", "NA", "N/A", "nan", "-"):
                out[target] = number(text, path, no, src) * factor
        rows.append(out)
    return rows


def parse(path: Path, opts: ParseOptions) -> Series:
    path = Path(path)
    mapping = opts.mapping
    if not isinstance(mapping, dict):
        raise ImportFault(path, None, "the csv format needs --map MAP.yaml (which column is what, in which unit)")
    specs = _column_specs(mapping, opts)
    time_col, to_time = _time_reader(mapping, opts)
    fmt = mapping.get("csv") if isinstance(mapping.get("csv"), dict) else {}
    delimiter, decimal = str(fmt.get("delimiter", ",")), str(fmt.get("decimal", "."))
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ImportFault(path, None, f"cannot read ({type(exc).__name__}: {exc})") from None
    reader = csv.reader(lines, delimiter=delimiter)
    header = [h.strip() for h in next(reader, [])]
    for needed in [*specs, *([time_col] if time_col else [])]:
        if needed not in header:
            raise ImportFault(
                path,
                1,
                f"no column {needed!r} (named in {opts.map_path or 'the map'}); the header has: {', '.join(header)}",
            )
    rows = _rows(path, reader, header, specs, time_col, to_time, decimal)
    if not rows:
        raise ImportFault(path, None, "no data rows after the header")
    frame = pd.DataFrame(rows)
    series = Series(
        source=path,
        format="csv",
        frame=frame,
        timed=time_col is not None,
        host=str(mapping["host"]) if mapping.get("host") else None,
    )
    if not series.timed:
        series.frame.insert(0, "sample", range(len(frame)))
        series.interval_s = float(mapping.get("interval_s", opts.interval_s))
        if mapping.get("start"):
            try:
                series.facts["start"] = _iso(str(mapping["start"]), zone(opts.timezone))
            except ValueError:
                raise _map_error(opts, "start", f"{mapping['start']!r} is not an ISO date and time") from None
    hw = mapping.get("hardware") if isinstance(mapping.get("hardware"), dict) else {}
    series.facts.update({k: hw[k] for k in HARDWARE_KEYS if k in hw})
    series.ignored = [h for h in header if h not in specs and h != time_col]
    return series
