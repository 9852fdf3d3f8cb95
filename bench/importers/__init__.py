"""`bench import`: measurements taken with other tools as run records.

One module per format, each a pure function `parse(path, ParseOptions) -> Series`
(record columns over time); `merge` joins a run's files on time and `writer` writes
the record. A new format is one module and one line in `FORMATS`.

Nothing here is imported until a file is parsed: the parsers use pandas, and every
`bench` command (even `bench --help`) reads this package for the format names.
"""

from __future__ import annotations

import csv
import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.errors import AtlasError

if TYPE_CHECKING:
    from bench.importers.series import ParseOptions, Series

# format name -> (module under bench.importers, its parse function)
FORMATS: dict[str, tuple[str, str]] = {
    "sar": ("sar", "parse"),
    "nvidia-smi": ("nvidia_smi", "parse"),
    "dcgmi-dmon": ("dcgm", "parse_dmon"),
    "dcgm-exporter": ("dcgm", "parse_exporter"),
    "csv": ("mapped_csv", "parse"),
}


def parse_file(fmt: str, path: Path, opts: ParseOptions) -> Series:
    """One file of format `fmt` as record columns; an `ImportFault` names what is wrong."""
    from bench.importers.sanitize import clean
    from bench.importers.series import ImportFault

    if fmt not in FORMATS:
        raise AtlasError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    if not Path(path).is_file():
        raise ImportFault(path, None, "no such file")
    module, function = FORMATS[fmt]
    parse = getattr(importlib.import_module(f"bench.importers.{module}"), function)
    try:
        series = parse(Path(path), opts)
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


def __getattr__(name: str) -> Any:
    """`ImportFault`, `ParseOptions` and `Series` from bench.importers.series, on first use."""
    if name in ("ImportFault", "ParseOptions", "Series"):
        from bench.importers import series

        return getattr(series, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["FORMATS", "ImportFault", "ParseOptions", "Series", "parse_file"]
