"""runs.csv: every figure of every compared run, exactly as computed.

Full precision (a start time keeps its seconds; `%.6g` made every run start at
1.79546e+09), whole numbers as integers (1 attempt, not 1.0), an unknown figure empty,
never a default nor a non-finite number. Same runs in, same bytes out: Python's
shortest round-trip form of each float is deterministic.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import pandas as pd


def cell(value: Any) -> str:
    """One value as runs.csv writes it: "" for unknown, integers without ".0", floats in full."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
        if not math.isfinite(number):
            return ""
        if number.is_integer() and abs(number) < 2**53:
            return str(int(number))
        return repr(number)
    return str(value)


def write_runs_csv(frame: pd.DataFrame, path: Path) -> None:
    with Path(path).open("w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow([str(c) for c in frame.columns])
        for row in frame.itertuples(index=False):
            writer.writerow([cell(None if _missing(v) else v) for v in row])


def _missing(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False
