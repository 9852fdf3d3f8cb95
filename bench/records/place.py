"""Placing run records: atomic `run.json` writes and the one atomic copy into results.

Every write of `run.json` is atomic (temporary file, fsync, rename): a reader never sees
half a file, and a killed writer leaves the previous version. A collected record is
copied beside its destination and renamed into place, so it appears whole or not at all.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.records.contract import RUN_JSON, SCHEMA_VERSION, TRAIN_JSONL, queue_wait_s, samples_files


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write JSON to a temporary file beside `path`, fsync it, and rename it over `path`."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh, indent=2, sort_keys=True, default=str)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def update_run_json(run_dir: str | Path, **sections: Any) -> dict[str, Any]:
    """Merge sections into `run_dir/run.json` atomically and return the new record.

    A dict value is merged key by key into the existing dict section (so a target can
    add `scheduler={"submit_time": ...}` without losing the recorder's `job_id`); any
    other value replaces the key. `scheduler.queue_wait_s` is recomputed when both
    `submit_time` and `start_time` are known. Used by the slurm/openshift targets after
    collection, when the scheduler knows more than the job did.
    """
    run_dir = Path(run_dir)
    path = run_dir / RUN_JSON
    record: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {"schema_version": SCHEMA_VERSION}
    for key, value in sections.items():
        if isinstance(value, dict) and isinstance(record.get(key), dict):
            merged = dict(record[key])
            merged.update(value)
            record[key] = merged
        else:
            record[key] = value
    sched = record.get("scheduler")
    if isinstance(sched, dict):
        wait = queue_wait_s(sched.get("submit_time"), sched.get("start_time"))
        if wait is not None:
            sched["queue_wait_s"] = wait
    write_json_atomic(path, record)
    return record


def copy_record(
    src: Path, dest: Path, extra_files: tuple[str, ...] = (), edit: Callable[[Path], None] | None = None
) -> Path:
    """Copy the record files of run dir `src` into `dest` as one atomic step.

    The copy is made in a hidden folder beside `dest`, optionally edited there (e.g.
    `update_run_json` with the scheduler's times), then renamed into place: an
    interrupted collect leaves no half record, and `dest`, once there, is never touched.
    """
    src, dest = Path(src), Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        names = [RUN_JSON, TRAIN_JSONL, *extra_files]
        for f in [*(src / n for n in names), *samples_files(src)]:
            if f.is_file():
                shutil.copy2(f, tmp / f.name)
        if edit is not None:
            edit(tmp)
        os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest
