"""The run index: one small entry per placed run, so a command reads only what it shows.

A results tree grows for years; `bench compare` of one commit must not parse the samples
and training logs of every run ever collected to find that commit's fifteen. Each run
gets its history entry (bench.analysis.history.run_entry: identity, environment, commit,
experiment, config hash, status, per-run figures, provenance; the same entry the results
branch keeps in `index/<env>/<run_id>.json`), one JSON line in its environment's index

    results/<env>/.index.jsonl    {"run_id": ..., "entry": ..., "stamp": {"run.json": [bytes, mtime_ns]}}

appended when the run is collected or imported, or by the first command that finds it
missing. One file per environment: a command reads ten thousand entries in one read, not
ten thousand opens. The record stays the source of truth: an entry whose stamp no longer
matches the record's run.json (restored, edited, copied in), of another entry version,
or on a line that cannot be read is rebuilt from the record, appended (the last line of
a run wins), and the command says which it rebuilt. The file is hidden, so nothing that
walks runs (`find_runs`, `bench archive`) takes it for an environment or a run.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from bench.analysis.history import ENTRY_VERSION
from bench.records.contract import RUN_JSON

if TYPE_CHECKING:
    from bench.records.read import RunData
    from bench.targets.lifecycle import Collected

INDEX_FILE = ".index.jsonl"


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
        return load_record(self.path, self.env)


def load_records(chosen: list[IndexedRun], meanwhile: Callable[[], object] | None = None) -> list[RunData]:
    """Each chosen run's whole record, in order, read by a forked child per core while this
    process runs `meanwhile()` (bench.analysis.parallel), with its per-run figures."""
    import bench.analysis.metrics  # noqa: F401 - imported once, before the fork, not in each child
    from bench.analysis.parallel import map_in_children

    return map_in_children(_with_figures, chosen, meanwhile, _record_bytes)


def _with_figures(run: IndexedRun) -> RunData:
    """The record and its figures (bench.analysis.metrics.run_metrics, kept in its memo): every
    command that reads records whole compares them, so a child computes them beside reading."""
    from bench.analysis.metrics import run_metrics

    record = run.load()
    run_metrics(record)
    return record


def _record_bytes(run: IndexedRun) -> float:
    """The size of a run's files, what reading it costs (0 for a folder that cannot be listed)."""
    try:
        return float(sum(e.stat(follow_symlinks=False).st_size for e in os.scandir(run.path) if e.is_file()))
    except OSError:
        return 0.0


def load_record(run_dir: Path, env: str) -> RunData:
    """`bench.records.read.load_run`, imported on first use: reading entries needs neither
    pandas nor the figures' code, so `bench history --results` starts without them."""
    from bench.records.read import load_run

    return load_run(run_dir, env)


def index_file(env_dir: Path | str) -> Path:
    """The index of one environment's folder of the results tree."""
    return Path(env_dir) / INDEX_FILE


def stamp(run_dir: Path | str) -> dict[str, list[int]]:
    """Size and modification time of the record's `run.json`: {} when there is none.

    Read for every run by every command, so it is one stat: collection writes a record's
    files once and `run.json` last (bench.records.place), and a record restored or copied
    in comes with a new one. A samples file or train.jsonl edited in place by hand is not
    noticed: delete the environment's `.index.jsonl` after such an edit."""
    try:
        st = os.stat(os.path.join(run_dir, RUN_JSON))
    except OSError:
        return {}
    return {RUN_JSON: [st.st_size, st.st_mtime_ns]}


def _line(run_dir: Path, run: RunData | None = None) -> tuple[dict[str, Any], str | None]:
    """(a run's entry computed from its record, its index line; None when the record
    changed while it was read)."""
    from bench.analysis.history import run_entry

    before = stamp(run_dir)
    entry = run_entry(run if run is not None else load_record(run_dir, run_dir.parent.name))
    if stamp(run_dir) != before:
        return entry, None
    return entry, json.dumps({"run_id": run_dir.name, "entry": entry, "stamp": before}, sort_keys=True)


def _append(env_dir: Path, lines: list[str]) -> None:
    """Append whole lines in one write (O_APPEND: two collectors never overwrite each
    other; a line cut short by a kill is unreadable and so rebuilt). A tree that cannot be
    written (read-only, full) keeps no index: the entries were computed anyway."""
    if not lines:
        return
    try:
        fd = os.open(index_file(env_dir), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, ("\n".join(lines) + "\n").encode())
        finally:
            os.close(fd)
    except OSError:
        pass


def write_entry(run_dir: Path, run: RunData | None = None) -> dict[str, Any]:
    """Compute a run's entry from its record (read now unless `run` is given) and keep it."""
    run_dir = Path(run_dir)
    entry, line = _line(run_dir, run)
    _append(run_dir.parent, [line] if line else [])
    return entry


def _saved(env_dir: str) -> tuple[dict[str, Any], bool]:
    """(run_id -> its last index line as stored, whether a line could not be read: skipped)."""
    try:
        with open(os.path.join(env_dir, INDEX_FILE), "rb") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return {}, False
    damaged = False
    try:  # one parse for the whole file; line by line only when one is damaged
        parsed = json.loads(b"[" + b",".join(line for line in lines if line.strip()) + b"]")
    except (ValueError, RecursionError):
        parsed = []
        for line in lines:
            try:
                parsed.append(json.loads(line))
            except (ValueError, RecursionError):
                damaged = True
    kept = {p["run_id"]: p for p in parsed if isinstance(p, dict) and isinstance(p.get("run_id"), str)}
    return kept, damaged


def _kept(saved: Any, current: dict[str, list[int]]) -> tuple[dict[str, Any] | None, str]:
    """(the stored entry, "") when it is current, else (None, why it is not)."""
    if saved is None:
        return None, "missing"
    entry = saved.get("entry")
    if not isinstance(entry, dict) or entry.get("version") != ENTRY_VERSION:
        return None, "of another version"
    if saved.get("stamp") != current:
        return None, "stale"
    return entry, ""


def _real_dirs(folder: str) -> list[str]:
    """Sorted names of the folders in `folder` that belong to the tree: not hidden (the
    index, a collect's temporary folder), not a symlink (a phantom environment or run)."""
    try:
        with os.scandir(folder) as it:
            return sorted(e.name for e in it if not e.name.startswith(".") and e.is_dir(follow_symlinks=False))
    except OSError:
        return []


def run_dirs(results: Path, envs: Iterable[str] | None = None) -> Iterator[tuple[str, str]]:
    """(env, run folder) of every run of the tree, in `find_runs`' order."""
    root = os.fspath(results)
    wanted = set(envs) if envs else None
    for env in _real_dirs(root):
        if wanted is not None and env not in wanted:
            continue
        env_dir = os.path.join(root, env)
        for run_id in _real_dirs(env_dir):
            yield env, os.path.join(env_dir, run_id)


def read_index(results: Path, envs: Iterable[str] | None = None, stream: TextIO | None = None) -> list[IndexedRun]:
    """Every run of the tree as its index entry, rebuilding those not current (naming the stale and damaged)."""
    root = os.fspath(results)
    wanted = set(envs) if envs else None
    runs, rebuilt = [], []
    for env in _real_dirs(root):
        if wanted is not None and env not in wanted:
            continue
        env_dir = os.path.join(root, env)
        (saved, damaged), new_lines = _saved(env_dir), []
        for run_id in _real_dirs(env_dir):
            run_dir = os.path.join(env_dir, run_id)
            entry, why = _kept(saved.get(run_id), stamp(run_dir))
            if entry is None:
                entry, line = _line(Path(run_dir))
                new_lines += [line] if line else []
                if why == "missing" and damaged:
                    why = "its line damaged or missing"
                if why != "missing":  # a run placed without a line (by hand, an older bench) is no news
                    rebuilt.append(f"{env}/{run_id} ({why})")
            runs.append(IndexedRun(env, run_id, Path(run_dir), entry))
        _append(Path(env_dir), new_lines)
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


def index_placed(run_dirs_placed: Iterable[Path], loaded: Mapping[Path, RunData] | None = None) -> None:
    """Append the index entry of each run just placed (collect, import, run), once: a run
    whose entry is current already is left alone. `loaded`: records the caller has read
    already (collection reads each record it places once), so they are not read again."""
    by_env: dict[Path, list[Path]] = {}
    for run_dir in run_dirs_placed:
        by_env.setdefault(Path(run_dir).parent, []).append(Path(run_dir))
    for env_dir, placed in by_env.items():
        (saved, _), lines = _saved(os.fspath(env_dir)), []
        for run_dir in placed:
            if (run_dir / RUN_JSON).is_file() and _kept(saved.get(run_dir.name), stamp(run_dir))[0] is None:
                lines += [line] if (line := _line(run_dir, (loaded or {}).get(run_dir))[1]) else []
        _append(env_dir, lines)


def index_collected(collected: Iterable[Collected]) -> None:
    """`index_placed` for what collection returned: each new record indexed from the read
    collection made of it (bench.targets.lifecycle.Collected), never read again here."""
    done = list(collected)
    index_placed([c.path for c in done], {c.path: c.run for c in done if c.run is not None})
