"""What every importer returns: one file's measurements as record columns over time.

Parsers are pure (file in, `Series` out) so each format can be tested alone, and the
merge and the writer never need to know which tool produced a column. GPU columns are
named `gpu<host index>_<DCGM field>`, the index the tool printed (nvidia-smi `index`,
DCGM's `gpu` label), so the job's GPUs can be chosen among those sampled afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pandas as pd

from bench.bounded_read import TooLarge, read_text_bounded
from bench.errors import AtlasError
from bench.importers.units import unit_factor as unit_factor  # where importers found it before units.py
from bench.records.columns import GPU_CATALOGUE, HOST_CATALOGUE, IMPORTED_CATALOGUE

# The host columns an import may fill, with their unit, and each DCGM field's unit: the
# catalogue's rows (bench.records.columns), as the recorder writes them.
HOST_COLUMNS: dict[str, str] = {col.name: col.unit for col in HOST_CATALOGUE + IMPORTED_CATALOGUE if col.importable}
GPU_FIELD_UNITS: dict[str, str] = {col.name: col.unit for col in GPU_CATALOGUE}


MAX_IMPORT_BYTES = 512 * 1024 * 1024  # one tool's log of one run: days at 1 Hz are tens of MB


def read_import_text(path: Path, encoding: str = "utf-8") -> str:
    """The text of one file to import, read with the bound MAX_IMPORT_BYTES; one ImportFault otherwise."""
    try:
        return read_text_bounded(Path(path), MAX_IMPORT_BYTES, "one file to import", encoding)
    except TooLarge as exc:
        raise ImportFault(path, None, str(exc).split(": ", 1)[1]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ImportFault(path, None, f"cannot read ({type(exc).__name__}: {exc})") from None


class ImportFault(AtlasError):
    """A file that cannot be imported: the message names the file and line."""

    def __init__(self, path: Path | str, line: int | None, problem: str) -> None:
        where = f"{path}:{line}" if line else f"{path}"
        super().__init__(f"{where}: {problem}")


@dataclass
class ParseOptions:
    """What the user told `bench import` that a file may not say itself."""

    timezone: str = "UTC"
    date: str | None = None  # YYYY-MM-DD for sar files without the header line
    interval_s: float | None = None  # sampling interval of files without a time column
    mapping: dict[str, Any] | None = None  # MAP.yaml for the csv format (one file's part of it)
    map_path: Path | None = None
    map_key: str = ""  # where in the map that part is (`files[2].`), for messages


@dataclass
class Series:
    """One file's samples. `frame` has `time` (Unix s) when `timed`, else `sample`
    (0, 1, 2, ...), plus record columns; `facts` feed run.json (hosts, hardware)."""

    source: Path
    format: str
    frame: pd.DataFrame
    timed: bool
    interval_s: float | None = None
    host: str | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    gpu_facts: dict[int, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    untimed_why: str = "the file has no time column"  # said in run.json when placed by row


def is_gpu_column(name: str) -> bool:
    head, _, field_name = name.partition("_")
    return head.startswith("gpu") and head[3:].isdigit() and field_name in GPU_FIELD_UNITS


def column_unit(name: str) -> str | None:
    """The record's unit of a column (`gpu3_DCGM_FI_DEV_FB_USED` -> MiB), None if unknown."""
    if name in HOST_COLUMNS:
        return HOST_COLUMNS[name]
    if is_gpu_column(name):
        return GPU_FIELD_UNITS[name.partition("_")[2]]
    return None


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise AtlasError(
            f"--timezone {name!r} is not a known time zone ({type(exc).__name__}); "
            "use an IANA name such as UTC or America/New_York"
        ) from exc


def local_to_unix(moment: datetime, tz: ZoneInfo) -> float:
    """A wall-clock time as the tools print it (local time of the host) in Unix seconds."""
    return moment.replace(tzinfo=tz).timestamp()


def number(text: str, path: Path, line: int, what: str) -> float:
    """A decimal from a file, or an ImportFault naming where it is not one."""
    try:
        return float(text)
    except ValueError:
        raise ImportFault(path, line, f"{what}: {text!r} is not a number") from None


def group_samples(gpu_ids: list[int]) -> list[int]:
    """Sample number of each per-GPU row: a new sample starts when a GPU appears again.

    nvidia-smi, `dcgmi dmon` and exporter scrapes print one row per GPU per sample, in
    GPU order; rows of one sample may carry slightly different timestamps, so grouping
    by repetition keeps one sample on one row of the record.
    """
    out: list[int] = []
    seen: set[int] = set()
    sample = 0
    for gpu in gpu_ids:
        if gpu in seen:
            sample += 1
            seen = set()
        seen.add(gpu)
        out.append(sample)
    return out


def gpu_frame(rows: list[tuple[int, int, str, float]], times: dict[int, float] | None) -> pd.DataFrame:
    """(sample, gpu, field, value) rows -> one row per sample with `gpu<i>_<field>` columns."""
    data: dict[int, dict[str, float]] = {}
    for sample, gpu, name, value in rows:
        data.setdefault(sample, {})[f"gpu{gpu}_{name}"] = value
    frame = pd.DataFrame.from_dict(data, orient="index").sort_index()
    frame.index.name = "sample"
    frame = frame.reset_index()
    if times is not None:
        frame.insert(0, "time", frame["sample"].map(times).astype(float))
        frame = frame.drop(columns="sample")
    return frame
