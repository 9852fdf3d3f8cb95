"""The run index: one small entry per placed run, so a command reads only what it shows.

A results tree grows for years; `bench compare` of one commit must not parse the samples
and training logs of every run ever collected to find that commit's fifteen. Each run
gets its history entry (bench.analysis.history.run_entry: identity, environment, commit,
experiment, config hash, status, per-run figures, provenance; the same entry the results
branch keeps in `index/<env>/<run_id>.json`) in

    results/<env>/.index/<run_id>.json    {"entry": ..., "stamp": {file: [bytes, mtime_ns]}}

written when the run is collected or imported, or by the first command that finds it
missing. The record stays the source of truth: an entry whose stamp no longer matches the
record's files (restored, edited, copied by hand) or of another entry version is rebuilt
from the record, and the command says which it rebuilt. The folder is hidden, so nothing
that walks runs (`find_runs`, `bench archive`) takes it for an environment or a run.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from bench.analysis.history import ENTRY_VERSION, run_entry
from bench.atomic_files import write_text_atomic
from bench.records.contract import RUN_JSON, TRAIN_JSONL
from bench.records.read import RunData, load_run

INDEX_DIR = ".index"


@dataclass(frozen=True)
class IndexedRun:
    """A run as its index entry shows it: enough to select it, before reading its record."""

    env: str
    run_id: str
    path: Path
    entry: dict[str, Any]

    @property
    def git_sha(self) -> str | None:
        sha = self.entry.get("commit")
        return sha if isinstance(sha, str) and sha else None

    @property
    def start_time(self) -> float | None:
        t = self.entry.get("start")
        return float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else None

    def load(self) -> RunData:
        """The whole record (samples, training log, every check)."""
        return load_run(self.path, self.env)


def entry_path(run_dir: Path) -> Path:
    """Where the index entry of `results/<env>/<run_id>` lives."""
    run_dir = Path(run_dir)
    return run_dir.parent / INDEX_DIR / f"{run_dir.name}.json"


def stamp(run_dir: Path) -> dict[str, list[int]]:
    """Size and modification time of the files an entry is computed from."""
    out: dict[str, list[int]] = {}
    try:
        names = os.listdir(run_dir)
    except OSError:
        return out
    for name in sorted(names):
        if name in (RUN_JSON, TRAIN_JSONL) or (name.startswith("samples-") and name.endswith(".csv")):
            try:
                st = os.stat(Path(run_dir) / name)
            except OSError:
                continue
            out[name] = [st.st_size, st.st_mtime_ns]
    return out


def write_entry(run_dir: Path, run: RunData | None = None) -> dict[str, Any]:
    """Compute a run's entry from its record (read now unless `run` is given) and keep it.

    A results tree that cannot be written (read-only, full) still gets the entry back: the
    index is a cache, and the next command computes it again."""
    run_dir = Path(run_dir)
    before = stamp(run_dir)
    entry = run_entry(run if run is not None else load_run(run_dir, run_dir.parent.name))
    if stamp(run_dir) == before:  # not a record changing under us
        path = entry_path(run_dir)
        try:
            path.parent.mkdir(exist_ok=True)
            write_text_atomic(path, json.dumps({"entry": entry, "stamp": before}, sort_keys=True) + "\n")
        except OSError:
            pass
    return entry


def _kept(run_dir: Path, current: dict[str, list[int]]) -> tuple[dict[str, Any] | None, str]:
    """(the stored entry, "") when it is current, else (None, why it is not)."""
    try:
        saved = json.loads(entry_path(run_dir).read_bytes())
    except FileNotFoundError:
        return None, "missing"
    except (OSError, ValueError, RecursionError):
        return None, "unreadable"
    entry = saved.get("entry") if isinstance(saved, dict) else None
    if not isinstance(entry, dict) or entry.get("version") != ENTRY_VERSION:
        return None, "of another version"
    if saved.get("stamp") != current:
        return None, "stale"
    return entry, ""


def _real_dir(path: Path) -> bool:
    return not path.name.startswith(".") and not path.is_symlink() and path.is_dir()


def run_dirs(results: Path, envs: Iterable[str] | None = None) -> Iterator[tuple[str, Path]]:
    """(env, run folder) of every run of the tree, in `find_runs`' order."""
    results = Path(results)
    if not results.is_dir():
        return
    wanted = set(envs) if envs else None
    for env_dir in sorted(p for p in results.iterdir() if _real_dir(p)):
        if wanted is not None and env_dir.name not in wanted:
            continue
        for run_dir in sorted(p for p in env_dir.iterdir() if _real_dir(p)):
            yield env_dir.name, run_dir


def read_index(results: Path, envs: Iterable[str] | None = None, stream: TextIO | None = None) -> list[IndexedRun]:
    """Every run of the tree as its index entry, rebuilding (and naming) those not current."""
    runs, rebuilt = [], []
    for env, run_dir in run_dirs(results, envs):
        entry, why = _kept(run_dir, stamp(run_dir))
        if entry is None:
            entry = write_entry(run_dir)
            rebuilt.append(f"{env}/{run_dir.name} ({why})")
        runs.append(IndexedRun(env, run_dir.name, run_dir, entry))
    if rebuilt:
        shown = ", ".join(rebuilt[:5]) + (f" and {len(rebuilt) - 5} more" if len(rebuilt) > 5 else "")
        print(
            f"index: rebuilt {len(rebuilt)} run index entr{'y' if len(rebuilt) == 1 else 'ies'} "
            f"from the record: {shown}",
            file=stream or sys.stderr,
        )
    return runs


def index_entries(results: Path, env: str | None = None, stream: TextIO | None = None) -> list[dict[str, Any]]:
    """The history entries of a results folder (`bench history --results`), from its index."""
    return [r.entry for r in read_index(results, [env] if env else None, stream)]


def index_placed(run_dirs_placed: Iterable[Path]) -> None:
    """Write the index entry of each run just placed (collect, import, run), once: a run
    whose entry is current already is left alone."""
    for run_dir in run_dirs_placed:
        run_dir = Path(run_dir)
        if (run_dir / RUN_JSON).is_file() and _kept(run_dir, stamp(run_dir))[0] is None:
            write_entry(run_dir)
