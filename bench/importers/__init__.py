"""`bench import`: measurements taken with other tools as run records.

One module per format, each a pure function `parse(path, ParseOptions) -> Series`
(record columns over time); `merge` joins a run's files on time and `writer` writes
the record. A new format is one module and one line in `FORMATS`.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

from bench.errors import AtlasError
from bench.importers import dcgm, mapped_csv, nvidia_smi, sar
from bench.importers.sanitize import clean
from bench.importers.series import ImportFault, ParseOptions, Series

Parser = Callable[[Path, ParseOptions], Series]

FORMATS: dict[str, Parser] = {
    "sar": sar.parse,
    "nvidia-smi": nvidia_smi.parse,
    "dcgmi-dmon": dcgm.parse_dmon,
    "dcgm-exporter": dcgm.parse_exporter,
    "csv": mapped_csv.parse,
}


def parse_file(fmt: str, path: Path, opts: ParseOptions) -> Series:
    if fmt not in FORMATS:
        raise AtlasError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    if not Path(path).is_file():
        raise ImportFault(path, None, "no such file")
    try:
        series = FORMATS[fmt](Path(path), opts)
    except csv.Error as exc:  # e.g. a field over the csv module's 128 KiB limit
        raise ImportFault(path, None, f"not a readable CSV ({exc}); is it this format, and not damaged?") from None
    except OverflowError as exc:
        raise ImportFault(path, None, f"a number too large to be a measurement ({exc})") from None
    clean(series)
    if not [c for c in series.frame.columns if c not in ("time", "sample")] or series.frame.empty:
        raise ImportFault(path, None, "no values to import (every cell empty or N/A?)")
    if series.timed and "time" in series.frame and len(series.frame) > 1 and series.frame["time"].nunique() == 1:
        raise ImportFault(
            path,
            None,
            f"all {len(series.frame)} rows carry one time, so the run's length is unknown (not 0 s): "
            "check the time column and its format (a date without the time of day?)",
        )
    return series


__all__ = ["FORMATS", "ImportFault", "ParseOptions", "Series", "parse_file"]
