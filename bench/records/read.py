"""Reading run records back, damaged ones included.

A record from a killed job, a half-copied folder or a newer bench is still worth
reporting: `load_run` never raises for bad content; it returns what it could read and
a list of problems, each naming the file and what is missing, for the report to show.
"""

from __future__ import annotations

import io
import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bench.records import ranges, strict_numbers
from bench.records.check import meta_problems, samples_problems
from bench.records.compile_facts import compile_problems
from bench.records.contract import EXIT_RUNNING, RUN_JSON, SCHEMA_VERSION, TRAIN_JSONL, samples_files
from bench.records.jobfiles import read_bytes
from bench.records.profile import read_profile
from bench.records.schema import schema_check
from bench.records.timeline import timeline_problems
from bench.records.timeline_rules import refuse_bad_timeline
from bench.records.trainclock import train_clock_refusal
from bench.records.trainlog import TrainLog, read_train_log, time_to_train

SAMPLES_BACKWARDS = "sample time goes backwards"  # how a samples clock step is named (RunData.clock_step)


@dataclass
class RunData:
    run_id: str
    env: str
    path: Path
    meta: dict[str, Any] = field(default_factory=dict)
    samples: dict[str, pd.DataFrame] = field(default_factory=dict)  # host -> rows
    train: TrainLog = field(default_factory=TrainLog)
    profile: dict[str, Any] | None = None  # profile.json (bench.records.profile), None when absent or damaged
    problems: list[str] = field(default_factory=list)
    schema_problems: list[str] = field(default_factory=list)  # run.json against run.schema.json
    refused: dict[str, str] = field(default_factory=dict)  # metric key -> why the record cannot support it
    clock_step: str | None = None  # why the job's clock cannot be trusted (it stepped): not compared
    # figures computed from this record, once (bench.analysis.metrics.RunContext); they travel
    # with it, so the figures a reader child computed come back with the record it read
    memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def git_sha(self) -> str | None:
        git = self.meta.get("git")
        sha = git.get("sha") if isinstance(git, dict) else None
        return sha if isinstance(sha, str) and sha else None

    @property
    def start_time(self) -> float | None:
        t = self.meta.get("start_time")
        if isinstance(t, (int, float)) and not isinstance(t, bool):
            return float(t)
        starts = self.train.of("run_start")
        return float(starts[0]["time"]) if starts else None

    @property
    def config_sha256(self) -> str | None:
        h = self.meta.get("config_sha256")
        if isinstance(h, str) and h:
            return h
        starts = self.train.of("run_start")
        h = starts[0].get("config_sha256") if starts else None
        return h if isinstance(h, str) and h else None


def _cell_number(value: object) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (OverflowError, ValueError, TypeError):
        return float("nan")
    return number if np.isfinite(number) else float("nan")


def _all_rows_have(raw: bytes, body_at: int, rows: int, commas: int) -> bool:
    """Whether each of the `rows` newline-ended lines from `body_at` on holds exactly `commas`
    commas (so none is blank or shifts the columns), counted with numpy: 10^5 rows in
    milliseconds where a Python loop over the lines takes a tenth of a second."""
    if rows == 0:
        return True
    if commas == 0:  # one column: a blank line would pass the count; the line-by-line path decides
        return False
    body = np.frombuffer(raw, dtype=np.uint8)[body_at:]
    ends = np.flatnonzero(body == 0x0A)
    if len(ends) < rows:
        return False
    ends = ends[:rows]  # not the cut-off line after the last newline
    before_end = np.searchsorted(np.flatnonzero(body[: ends[-1]] == 0x2C), ends)  # commas before each newline
    return bool((np.diff(before_end, prepend=0) == commas).all())


def _count(data: bytes, byte: int) -> int:
    """How many times `byte` occurs in `data`: numpy, a quarter of the time of bytes.count on 60 MB."""
    return int(np.count_nonzero(np.frombuffer(data, dtype=np.uint8) == byte))


def _parse_csv(text: bytes) -> pd.DataFrame:
    """pandas' C parser over a samples file's bytes (ValueError and the parser's errors pass through)."""
    with warnings.catch_warnings():  # a column of mixed cells: every column is made numbers below
        warnings.simplefilter("ignore", pd.errors.DtypeWarning)
        warnings.simplefilter("ignore", pd.errors.ParserWarning)  # a row of extra cells: `_parsed_whole` refuses it
        return pd.read_csv(io.BytesIO(text), index_col=False)  # in blocks: low_memory=False takes ~2x the CPU


_PARSE_ERRORS = (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError)


def _parsed_whole(complete: bytes, rows: int, cells: int) -> tuple[pd.DataFrame | None, bool]:
    """(the newline-ended lines parsed as they are, whether the parse itself shows each of the
    `rows` lines holds exactly `cells` commas): the usual file, checked without a pass per line.

    Without a quote or a carriage return, pandas splits rows exactly at the newlines and a
    row's cells exactly at the commas. A line with fewer commas then leaves its last cell
    missing, and a blank line is skipped (one row short); a line with more commas loses its
    extra cells silently (index_col=False), but the file's comma count, (rows + 1) x cells,
    leaves no room for one once no line has fewer. So: `rows` rows, none missing its last cell,
    and that count prove what `_all_rows_have` counts line by line. Anything else (a gap in
    the last column, a damaged file) is (the parse or None, False), and the lines are counted."""
    if cells == 0 or b'"' in complete or b"\r" in complete or _count(complete, 0x2C) != (rows + 1) * cells:
        return None, False
    try:
        df = _parse_csv(complete)
    except _PARSE_ERRORS:
        return None, False
    return df, len(df) == rows and not bool(df.iloc[:, -1].isna().to_numpy().any())


def read_samples(path: Path) -> tuple[pd.DataFrame | None, list[str]]:
    """One samples CSV as numbers. Named and dropped: a cut-off last row, rows with the wrong
    number of cells (they would shift every column), cells that are not finite numbers."""
    problems: list[str] = []
    name = path.name
    try:
        raw = read_bytes(path)
    except OSError as exc:
        return None, [f"{name} unreadable ({type(exc).__name__}: {str(exc)[:120]})"]
    if not raw:
        return None, [f"{name} is empty (no samples)"]
    header_end = raw.find(b"\n")
    header = raw if header_end < 0 else raw[:header_end]
    # the newline-ended lines (no copy of a whole file); after them, a cut-off row
    complete = raw if raw.endswith(b"\n") else raw[: raw.rfind(b"\n") + 1]
    if header_end >= 0 and not raw.endswith(b"\n"):
        problems.append(f"{name}: last row is incomplete (job killed while writing?); dropped")
    cells = header.count(b",")
    rows = max(_count(complete, 0x0A) - 1, 0)
    df, whole = _parsed_whole(complete, rows, cells)  # the usual case: one parse, no count per line
    if not whole:
        if _all_rows_have(complete, len(header) + 1, rows, cells):  # the file as it is
            text = complete or header + b"\n"
        else:
            body = complete.split(b"\n")[1:-1]
            good = [line for line in body if line.count(b",") == cells and line.strip()]
            wrong = sum(1 for line in body if line.strip()) - len(good)
            if wrong:
                problems.append(f"{name}: {wrong} row(s) with the wrong number of cells (not {cells + 1}); dropped")
            text = b"\n".join([header, *good]) + b"\n"
            df = None
        try:
            df = df if df is not None else _parse_csv(text)
        except _PARSE_ERRORS as exc:
            return None, [*problems, f"{name} unreadable ({type(exc).__name__}: {str(exc)[:120]})"]
    if "time" not in df.columns:
        return None, [f"{name} has no 'time' column (header damaged?)"]
    bad_cells = 0
    for col in df.columns:
        raw_col = df[col]
        if raw_col.dtype == np.float64:  # the parser's numbers (the usual case): only an infinity is not finite
            inf = np.isinf(raw_col.to_numpy())
            if inf.any():
                bad_cells += int(inf.sum())
                df[col] = raw_col.mask(inf)
            continue
        if raw_col.dtype.kind in "iu":  # whole numbers: every one finite
            df[col] = raw_col.astype(float)
            continue
        try:
            values = pd.to_numeric(raw_col, errors="coerce").astype(float)
        except (OverflowError, ValueError, TypeError):  # digits beyond any float: one cell at a time
            values = raw_col.map(_cell_number).astype(float)
        values[~np.isfinite(values.to_numpy())] = np.nan
        bad_cells += int((values.isna() & raw_col.notna()).sum())
        df[col] = values
    if bad_cells:
        problems.append(f"{name}: {bad_cells} value(s) are not finite numbers (damaged rows?); treated as missing")
    good_time = np.isfinite(df["time"].to_numpy(dtype=float, na_value=np.nan))
    good_time &= (df["time"].to_numpy(dtype=float, na_value=np.nan) >= 0) & (
        df["time"].to_numpy(dtype=float, na_value=np.nan) <= strict_numbers.LATEST_TIME
    )
    if not good_time.all():
        problems.append(f"{name}: {int((~good_time).sum())} row(s) without a readable time; dropped")
        df = df[good_time]
    times = df["time"].to_numpy(dtype=float)
    if times.size > 1:  # the clock went backwards: those rows' times cannot be trusted
        backwards = times < np.maximum.accumulate(np.concatenate(([-np.inf], times[:-1])))
        if backwards.any():
            problems.append(
                f"{name}: {SAMPLES_BACKWARDS}: {int(backwards.sum())} row(s) earlier than a row before them "
                "(clock stepped back?); those rows dropped"
            )
            df = df[~backwards]
    if df.empty:
        problems.append(f"{name} has no complete sample rows")
        return None, problems
    return df.reset_index(drop=True), problems


def _read_meta(data: RunData, collected: bool) -> dict[str, Any]:
    """`run.json` checked against the schema and the record checks; {} when unusable."""
    parsed = False
    try:
        meta = strict_numbers.loads(read_bytes(data.path / RUN_JSON, strict_numbers.MAX_JSON_BYTES))
        if not isinstance(meta, dict):
            raise ValueError(f"top level is {type(meta).__name__}, not an object")
        parsed = True
    except FileNotFoundError:
        data.problems.append(f"{RUN_JSON} is missing (no provenance, exit status or queue wait)")
        data.schema_problems = [f"{RUN_JSON} is missing"]
        meta = {}
    except (OSError, ValueError, UnicodeDecodeError, RecursionError) as exc:
        data.problems.append(f"{RUN_JSON} unreadable ({type(exc).__name__}: {str(exc)[:120]})")
        data.schema_problems = [f"{RUN_JSON} unreadable"]
        meta = {}
    if parsed:
        data.schema_problems, refused = schema_check(meta)  # one validation pass for both
        data.problems.extend(data.schema_problems)
        if refused:  # a value the schema refuses is never shown: the report says unknown
            strict_numbers.excluded(meta, refused)
            data.problems.append(f"{RUN_JSON}: {len(refused)} value(s) refused above are excluded (shown as unknown)")
        if meta.get("schema_version") != SCHEMA_VERSION or set(meta) <= {"schema_version"}:
            meta = {}  # another version's keys may mean other things; an empty record has none
    data.meta = meta
    if meta:
        exit_info = meta.get("exit")
        if isinstance(exit_info, dict) and exit_info.get("status") == EXIT_RUNNING:
            data.problems.append(
                f"{RUN_JSON} still says 'running': the recorder did not finish (killed, or still running)"
            )
        if isinstance(meta.get("run_id"), str) and meta["run_id"] and meta["run_id"] != data.run_id:
            data.problems.append(f"{RUN_JSON} names run_id {meta['run_id']!r} but its folder is {data.run_id!r}")
        data.problems.extend(meta_problems(meta, data.path, collected))
        data.problems.extend(ranges.refuse_out_of_range(meta, data.refused))
        data.problems.extend(ranges.cost_inputs_missing(meta, data.refused))
        data.problems.extend(ranges.overlapping_attempts(meta))
        data.problems.extend(refuse_bad_timeline(meta))  # before the readers: a refused span is unknown
        data.problems.extend(timeline_problems(meta.get("timeline")))
        start, end = strict_numbers.finite(meta.get("start_time")), strict_numbers.finite(meta.get("end_time"))
        if start is not None and end is not None and end < start:
            del meta["end_time"]  # times out of order: the duration (and its cost) is unknown, not negative
    return meta


def load_run(run_dir: Path, env: str | None = None, collected: bool = True) -> RunData:
    """Read a run folder; every problem (schema, checks, damage) lands in `problems`.

    `collected`: the record sits in a results tree, so collection's frozen
    `environment` facts are expected.
    """
    run_dir = Path(run_dir)
    data = RunData(run_id=run_dir.name, env=env or run_dir.parent.name, path=run_dir)
    if not run_dir.is_dir():
        data.problems.append(f"run folder {run_dir} is missing")
        return data
    meta = _read_meta(data, collected)
    files = samples_files(run_dir)
    if not files:
        data.problems.append("no samples-<host>.csv (no CPU, memory or GPU figures)")
    named = ranges.named_samples_files(meta)
    for path in files:
        host = path.name[len("samples-") : -len(".csv")]
        if named is not None and path.name not in named:
            data.problems.append(
                f"{path.name}: a samples file of no host run.json names ({', '.join(sorted(named))}); "
                "not counted (one samples file per host)"
            )
            continue
        df, problems = read_samples(path)
        data.problems.extend(problems)
        data.clock_step = data.clock_step or next((p for p in problems if SAMPLES_BACKWARDS in p), None)
        if df is not None:
            data.samples[host] = df
            data.problems.extend(samples_problems(path.name, df, meta))
    data.train = read_train_log(run_dir / TRAIN_JSONL)
    data.problems.extend(_train_problems(data.train, run_dir, meta))
    data.problems.extend(compile_problems(meta, data.train))
    data.profile, profile_problems = read_profile(run_dir)
    data.problems.extend(profile_problems)
    clock = train_clock_refusal(data.train, meta)
    if clock:
        data.problems.append(clock)
        data.refused["time_to_train_s"] = clock
    data.clock_step = data.clock_step or data.train.clock_step or clock
    return data


def _train_problems(train: TrainLog, run_dir: Path, meta: dict[str, Any]) -> list[str]:
    """What is wrong with the training log; an import has none by design, which is no problem."""
    if isinstance(meta.get("import"), dict) and not os.path.lexists(run_dir / TRAIN_JSONL):
        return []
    out = list(train.problems)
    if train.events:
        if not train.of("run_start"):
            out.append(f"{TRAIN_JSONL} has no run_start event")
        if not train.of("train"):
            out.append(f"{TRAIN_JSONL} has no train lines (no images/s)")
        _, unfinished = time_to_train(train)
        out.extend(f"{TRAIN_JSONL}: {p}" for p in unfinished)
    return out


def _real_dir(path: Path) -> bool:
    """A folder of the results tree itself: a symlink is not an environment or a run (it would
    show one run twice, as a phantom environment)."""
    return not path.name.startswith(".") and not path.is_symlink() and path.is_dir()


def iter_runs(results: Path, envs: list[str] | None = None) -> Iterator[RunData]:
    """Every `results/<env>/<run_id>/` folder, read one at a time (sorted by env then run id):
    a caller that keeps none of them reads a tree of any size in constant memory."""
    results = Path(results)
    if not results.is_dir():
        return
    for env_dir in sorted(p for p in results.iterdir() if _real_dir(p)):
        if envs and env_dir.name not in envs:
            continue
        for run_dir in sorted(p for p in env_dir.iterdir() if _real_dir(p)):
            yield load_run(run_dir, env_dir.name)


def find_runs(results: Path, envs: list[str] | None = None) -> list[RunData]:
    """Every `results/<env>/<run_id>/` folder, sorted by env then run id."""
    return list(iter_runs(results, envs))


LOG_GLOBS = ("job.log", "slurm-*.out")  # the job's stdout+stderr, as each target fetches it


def workload_error(run_dir: Path) -> str | None:
    """The workload's own error line from the job's log, for a failed run's one-line reason.

    The workload prints `biggan: error: ...` for what it refuses; an uncaught exception
    ends its traceback with `SomeError: ...`. Else the train log's last run_stop.
    """
    run_dir = Path(run_dir)
    lines: list[str] = []
    for pattern in LOG_GLOBS:
        for path in sorted(run_dir.glob(pattern)):
            try:
                lines += path.read_text(errors="replace").splitlines()
            except OSError:
                continue
    lines = [line.strip() for line in lines if line.strip()]
    for line in reversed(lines):
        if line.startswith(("biggan: error:", "bench record:")):
            return line[:300]
    for line in reversed(lines):
        head = line.split(":", 1)[0]
        if ":" in line and head.replace(".", "").isidentifier() and head.endswith(("Error", "Exception")):
            return line[:300]
    stops = read_train_log(run_dir / TRAIN_JSONL).of("run_stop")
    if stops:
        last = stops[-1]
        return f"train.jsonl: run_stop {last.get('status')} at iteration {last.get('iteration')}"
    return lines[-1][:300] if lines else None
