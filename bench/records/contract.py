"""The run record's on-disk contract: file names, `run.json` keys, statuses.

Everything downstream (collect, compare, report) reads only what this module names, so
the format is versioned (`schema_version`); `bench.records.place` writes it atomically.
See bench/README.md for the full contract.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
RUN_JSON = "run.json"
TRAIN_JSONL = "train.jsonl"
SAMPLES_PREFIX = "samples-"
SAMPLES_SUFFIX = ".csv"

# Values of run.json exit.status. "running" is written at start; a record still saying
# "running" after its job ended means the recorder itself was killed.
EXIT_RUNNING = "running"

# Every top-level key the recorder writes (bench/README.md documents each one).
RUN_JSON_KEYS = (
    "schema_version",
    "run_id",
    "env",
    "experiment",
    "config",
    "config_sha256",
    "git",
    "image",
    "hosts",
    "hardware",
    "software",
    "command",
    "scheduler",
    "exit",
    "resumed_from",
    "sampler_errors",
    "sample_interval_s",
    "start_time",
    "end_time",
    "previous_attempts",
    "bench_version",
    "samples_file",
    "samples_rows",
    "recorder",
)
SCHEDULER_KEYS = ("kind", "job_id", "submit_time", "start_time", "end_time", "queue_wait_s")


def samples_name(host: str) -> str:
    """`samples-<host>.csv`, with characters unsafe in a file name replaced."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in host) or "host"
    return f"{SAMPLES_PREFIX}{safe}{SAMPLES_SUFFIX}"


def read_run_json(run_dir: Path) -> dict[str, Any]:
    """The parsed `run.json` of a run directory (raises OSError / ValueError as json does)."""
    return json.loads((Path(run_dir) / RUN_JSON).read_text())


def samples_files(run_dir: Path) -> list[Path]:
    return sorted(Path(run_dir).glob(f"{SAMPLES_PREFIX}*{SAMPLES_SUFFIX}"))
