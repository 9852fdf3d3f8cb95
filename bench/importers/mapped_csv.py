"""Any CSV (a spreadsheet's export) with a map that says what its columns are.

    # MAP.yaml: one file (given on the command line)
    time: {column: "Time", format: "%d.%m.%Y %H:%M:%S"}   # any strptime format, or unix / unix_ms / iso
    # time: {column: "Time", format: "%H:%M:%S"}  # time of day only: with --date (or date:) YYYY-MM-DD
    # interval_s: 5          # instead of time: the map names no time column
    # start: "2024-03-14 09:00:00"   # optional with interval_s: the first row's time
    host: node17
    csv: {delimiter: ";", decimal: ","}
    columns:
      "RAM used (GB)": {to: host_mem_used_bytes, unit: GB_SI}
      "GPU0 util": {to: gpu0_DCGM_FI_DEV_GPU_UTIL, unit: fraction}
    derived:                 # arithmetic over one row's columns (bench.importers.expression: runs no code)
      host_cpu_percent: "100 - `%idle`"
    hardware: {cpu_cores_logical: 32}

or `files: [{file: gpu.csv, interval_s: 1, columns: {...}}, {file: cpu.csv, time: ...}]`
for several files of one run (bench.importers.csv_map). A value is multiplied by `scale`
(default 1, above 0), then converted from `unit` to the record column's unit
(bench/README.md); a value outside the column's valid range (bench.records.columns) is
refused with the column named, since it means a wrong unit or scale. Columns the map
does not use are listed as ignored.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bench.importers.csv_map import Target, csv_options, expression_columns, targets, unit_warnings
from bench.importers.csv_time import iso_time, map_fault, time_column
from bench.importers.series import ImportFault, ParseOptions, Series, number, read_import_text, zone
from bench.records.columns import column_of

HARDWARE_KEYS = ("cpu_model", "cpu_cores_logical", "cpu_cores_physical", "memory_bytes")
MISSING = ("", "NA", "N/A", "nan", "-")
TIME_WORDS = ("time", "date", "zeit", "heure", "timestamp")
EPSILON = 1e-6  # rounding of a unit conversion is not out of range


def _read(
    path: Path, mapping: dict[str, Any], opts: ParseOptions
) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """The header and each non-blank data row (line number, column -> cell)."""
    delimiter, _ = csv_options(mapping, opts)
    lines = read_import_text(path, "utf-8-sig").splitlines()
    reader = csv.reader(lines, delimiter=delimiter)
    header = [h.strip() for h in next(reader, [])]
    rows = []
    for no, row in enumerate(reader, 2):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise ImportFault(path, no, f"{len(row)} fields where the header has {len(header)}")
        rows.append((no, dict(zip(header, (c.strip() for c in row)))))
    return header, rows


def _numbers(path: Path, rows: list[tuple[int, dict[str, str]]], column: str, decimal: str) -> np.ndarray:
    out = np.full(len(rows), np.nan)
    for i, (no, cells) in enumerate(rows):
        text = cells[column].replace(decimal, ".") if decimal != "." else cells[column]
        if text not in MISSING:
            out[i] = number(text, path, no, column)
    return out


def _values(target: Target, source: pd.DataFrame) -> np.ndarray:
    """A target's values in the record's unit: a column, or its checked expression over each row."""
    with np.errstate(over="ignore"):  # 1e308 kB is inf: sanitize drops it, naming the column
        if target.expression is None:
            return source[target.source].to_numpy(dtype=float) * target.factor
        columns = {c: source[c].to_numpy(dtype=float) for c in target.expression.columns}
        return target.expression.evaluate(columns, len(source)) * target.factor


def _check_range(path: Path, target: Target, values: np.ndarray, lines: list[int]) -> None:
    """Refuse a value the record column cannot take: a wrong unit or scale, named where it is."""
    col = column_of(target.column)
    if col is None:
        return
    low, high = col.low, None if col.high_per_core else col.high
    with np.errstate(invalid="ignore"):
        bad = ((values < low - EPSILON) if low is not None else False) | (
            (values > high + EPSILON) if high is not None else False
        )
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        span = f"{'' if low is None else f'{low:g}'}..{'' if high is None else f'{high:g}'} {col.unit}"
        raise ImportFault(
            path,
            lines[i],
            f"{target.key} gives {target.column} = {values[i]:g} {col.unit}, outside its valid range {span} "
            f"({int(bad.sum())} such row(s)): check the map's unit and scale for it",
        )


def _untimed_why(header: list[str]) -> tuple[str, list[str]]:
    """What run.json says of a file placed by row, and a warning when it seems to have a time column."""
    timely = [h for h in header if any(w in h.lower() for w in TIME_WORDS)]
    if not timely:
        return "the map names no time column, and the file has none", []
    return f"the map names no time column; the file's {', '.join(map(repr, timely))} left unused", [
        f"warning: {', '.join(map(repr, timely))} look(s) like a time column: give time: {{column, format}} "
        "in the map to place the rows by it"
    ]


def parse(path: Path, opts: ParseOptions) -> Series:
    path = Path(path)
    mapping = opts.mapping
    if not isinstance(mapping, dict):
        raise ImportFault(path, None, "the csv format needs --map MAP.yaml (which column is what, in which unit)")
    wanted = targets(mapping, opts)
    timer = time_column(mapping, opts)
    header, rows = _read(path, mapping, opts)
    sources = {t.source: [t.source] for t in wanted if not t.is_expr}
    sources.update({t.source: expression_columns(t, header, opts, path) for t in wanted if t.is_expr})
    for t in wanted:
        if not t.is_expr and t.source not in header:
            raise ImportFault(
                path,
                1,
                f"no column {t.source!r} (named in {opts.map_path or 'the map'}); the header has: {', '.join(header)}",
            )
    if timer is not None and timer.column not in header:
        raise ImportFault(path, 1, f"no time column {timer.column!r}; the header has: {', '.join(header)}")
    if not rows:
        raise ImportFault(path, None, "no data rows after the header")
    used = list(dict.fromkeys(c for cols in sources.values() for c in cols))
    _, decimal = csv_options(mapping, opts)
    source = pd.DataFrame({c: _numbers(path, rows, c, decimal) for c in used}, index=range(len(rows)))
    lines = [no for no, _ in rows]
    frame = pd.DataFrame(index=range(len(rows)))
    for t in wanted:
        values = _values(t, source)
        _check_range(path, t, values, lines)
        frame[t.column] = values
    series = Series(source=path, format="csv", frame=frame, timed=timer is not None, host=_host(mapping))
    series.notes.extend(unit_warnings(mapping))
    if timer is not None:
        times, notes = timer.times([(no, cells[timer.column]) for no, cells in rows], path)
        frame.insert(0, "time", times)
        series.notes.extend(notes)
    else:
        _place_by_row(series, mapping, opts, header)
    hw = mapping.get("hardware") if isinstance(mapping.get("hardware"), dict) else {}
    series.facts.update({k: hw[k] for k in HARDWARE_KEYS if k in hw})
    series.ignored = [h for h in header if h not in used and h != (timer.column if timer else None)]
    return series


def _host(mapping: dict[str, Any]) -> str | None:
    return str(mapping["host"]) if mapping.get("host") else None


def _place_by_row(series: Series, mapping: dict[str, Any], opts: ParseOptions, header: list[str]) -> None:
    """A file the map gives no time column: rows `interval_s` apart from `start` (or the run's first time)."""
    interval = mapping.get("interval_s", opts.interval_s)
    if isinstance(interval, bool) or not isinstance(interval, (int, float)) or interval <= 0:
        raise map_fault(
            opts, "time", "missing: give time: {column, format} or interval_s for a file without a time column"
        )
    series.frame.insert(0, "sample", range(len(series.frame)))
    series.interval_s = float(interval)
    series.untimed_why, warnings = _untimed_why(header)
    series.notes.extend(warnings)
    if mapping.get("start"):
        try:
            series.facts["start"] = iso_time(str(mapping["start"]), zone(opts.timezone))
        except ValueError:
            raise map_fault(opts, "start", f"{mapping['start']!r} is not an ISO date and time") from None
