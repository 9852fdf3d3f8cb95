"""Placing run records: atomic `run.json` writes, and collection's one writer.

Every write of `run.json` is atomic (temporary file, fsync, rename): a reader never sees
half a file, and a killed writer leaves the previous version. `place_run` is the only
code that puts a run into the results tree: the record is fetched beside its
destination, the environment's facts are frozen into it, and the folder is renamed into
place once. Nothing writes a placed record again.

The environment's facts are handed in (bench.environments.facts.environment_facts, by the
caller: collection, import): the record's layer reads no env.yaml.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.atomic_files import disk_full_error, is_disk_full, locked, sweep_temp_dirs, write_json_atomic
from bench.errors import AtlasError
from bench.names import check_name
from bench.records.contract import RUN_JSON, SCHEMA_VERSION, SKIPPED, TRAIN_JSONL, queue_wait_s
from bench.records.inside_tree import require_inside
from bench.records.jobfiles import JobFileRefused, read_bytes, sweep
from bench.records.rebuild import rebuild_lost_final_write
from bench.records.sampling import first_start
from bench.records.schema import schema_problems
from bench.records.timeline import collected_timeline, marks_log, submit_time_in_job

RUN_JSON_MAX_BYTES = 16 << 20


@dataclass(frozen=True)
class Placed:
    path: Path
    new: bool  # False: the run was already in the results tree and was left untouched
    problems: tuple[str, ...] = ()  # schema problems of the placed record (it is placed anyway)
    skipped: tuple[str, ...] = ()  # the job's files not copied (links, devices, FIFOs, oversized), named
    warnings: tuple[str, ...] = ()  # e.g. the platform's timeline marks could not be read (the run is placed)


def freeze(record: dict[str, Any], environment: Mapping[str, Any], scheduler: dict[str, Any]) -> dict[str, Any]:
    """The record as placed: the scheduler's facts merged in, queue wait computed once,
    the environment's facts (`environment`, as the caller froze them) kept. Keys the target
    does not know (None) are kept."""
    sched = dict(record.get("scheduler") or {}) if isinstance(record.get("scheduler"), dict) else {}
    sched.update({k: v for k, v in scheduler.items() if v is not None})
    # Queued until the FIRST attempt started: a rerun or requeue in the same folder is not queue time.
    starts = [t for t in (sched.get("start_time"), first_start(record)) if isinstance(t, (int, float))]
    wait = queue_wait_s(sched.get("submit_time"), min(starts) if starts else None)
    if wait is not None:
        sched["queue_wait_s"] = wait
    record["scheduler"] = sched
    record["environment"] = dict(environment)
    return record


MarksFn = Callable[[dict[str, Any]], dict[str, Any]]


def place_run(
    results: Path,
    environment: Mapping[str, Any],
    run_id: str,
    fetch: Callable[[Path], dict[str, Any] | None],
    marks: MarksFn | None = None,
) -> Placed:
    """Place one finished run into `results/<env>/<run_id>/`: atomically, and only once.

    `environment`: the environment's facts to freeze into the record (its `name` names
    the folder), computed by the caller (bench.environments.facts.environment_facts).

    `fetch(folder)` (a target's `fetch`) copies the run's record files into an empty
    hidden folder beside the destination and returns the scheduler's facts. The record
    is then frozen (`freeze`), written, and the folder renamed into place: a reader sees
    the whole record or none, and nothing writes `run.json` after this. A run already
    there is left untouched (`Placed.new` is False). The fetch names what it refused to
    copy under `SKIPPED`; anything not a regular file that reached the folder anyway is
    removed (`jobfiles.sweep`) and named too. `marks(facts)` (a target's `timeline_marks`)
    gives the platform's timeline marks, once, after the fetch (bench.records.timeline).
    """
    env_name = str(environment["name"])
    check_name(env_name, "environment")  # before any path is made of it
    dest = Path(results) / env_name / run_id
    require_inside(Path(results), dest, f"{env_name}: run {run_id}")  # never written through a link out of the tree
    if (dest / RUN_JSON).is_file():
        return Placed(dest, False)
    try:
        with locked(Path(results)):  # one collect at a time: a second waits, then finds the run placed
            return _place_locked(dest, environment, run_id, fetch, marks)
    except OSError as exc:
        if is_disk_full(exc):
            raise disk_full_error(exc, dest) from None
        raise


def _place_locked(
    dest: Path,
    environment: Mapping[str, Any],
    run_id: str,
    fetch: Callable[[Path], dict[str, Any] | None],
    marks: MarksFn | None,
) -> Placed:
    if (dest / RUN_JSON).is_file():
        return Placed(dest, False)
    env_name = dest.parent.name
    if dest.exists() and any(dest.iterdir()):
        raise AtlasError(f"{dest} exists but holds no {RUN_JSON} (a copy by hand?); move it away and collect again")
    dest.parent.mkdir(parents=True, exist_ok=True)
    sweep_temp_dirs(dest.parent)  # hidden folders of a collect killed half-way (we hold the lock)
    tmp = Path(tempfile.mkdtemp(prefix=f".{run_id}.", dir=dest.parent))
    try:
        facts = dict(fetch(tmp) or {})
        skipped = tuple(str(s) for s in facts.pop(SKIPPED, None) or ()) + tuple(sweep(tmp))
        path = tmp / RUN_JSON
        if not path.is_file():
            raise AtlasError(f"{env_name}: run {run_id} left no {RUN_JSON}: nothing to collect (see its job log)")
        try:
            record = json.loads(read_bytes(path, RUN_JSON_MAX_BYTES))
        except (OSError, ValueError, UnicodeDecodeError, RecursionError, JobFileRefused) as exc:
            raise AtlasError(
                f"{env_name}: run {run_id}'s {RUN_JSON} is unreadable ({exc}); it stays where it ran"
            ) from exc
        problems: tuple[str, ...] = ()
        warnings: tuple[str, ...] = ()
        if isinstance(record, dict) and record.get("schema_version") == SCHEMA_VERSION:
            started_with = submit_time_in_job(record)  # before freeze merges the scheduler's facts in
            record = freeze(
                rebuild_lost_final_write(record, tmp), environment, facts
            )  # a lost final write: from train.jsonl
            timeline, warning = collected_timeline(
                record,
                marks_log(tmp / TRAIN_JSONL),
                (lambda: marks(facts)) if marks is not None else None,
                time.time(),
                started_with,
            )
            record["timeline"] = timeline
            warnings = (warning,) if warning else ()
            problems = tuple(schema_problems(record))
            write_json_atomic(path, record)
        else:
            problems = tuple(schema_problems(record))  # placed as it came: its reader says why
        if dest.exists():
            dest.rmdir()
        os.rename(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Placed(dest, True, problems, skipped, warnings)
