"""`DIR/train.jsonl`: the workload's part of the run record (contract: README.md).

One JSON object per line, appended and flushed line by line so that a killed job leaves
every complete line readable. Only rank 0 writes.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any, TextIO


def _clean(value: Any) -> Any:
    """NaN/inf are not JSON: write them as null so every line stays parseable."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class TrainLog:
    def __init__(self, run_dir: Path, enabled: bool = True) -> None:
        self.path = run_dir / "train.jsonl"
        self._fh: TextIO | None = open(self.path, "a", encoding="utf-8") if enabled else None

    def write(self, event: str, **fields: Any) -> dict[str, Any]:
        record = {"event": event, "time": time.time(), **{k: _clean(v) for k, v in fields.items()}}
        if self._fh is not None:
            self._fh.write(json.dumps(record, sort_keys=False) + "\n")
            self._fh.flush()
            if event in ("run_stop", "checkpoint"):
                os.fsync(self._fh.fileno())
        return record

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def read_events(run_dir: Path) -> list[dict[str, Any]]:
    """Every complete line of `DIR/train.jsonl` (a torn last line is skipped)."""
    events = []
    path = run_dir / "train.jsonl"
    if not path.exists():
        return events
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return events
