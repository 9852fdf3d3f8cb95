"""`bench report`: Markdown + charts for one commit's runs, and the index of reports.

Output: `<out>/<date>-<shortsha>/` (README.md, charts, summary.json, runs.csv) and
`<out>/README.md`. Date and sha come from the runs themselves, never from "now", and
all numbers go through `metrics.fmt`, so the same results give the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import jinja2
import numpy as np
import pandas as pd

from bench.analysis.advisor import advise
from bench.analysis.changepoints import change_points
from bench.analysis.compare import CompareResult
from bench.analysis.crosscheck import cross_check_runs
from bench.analysis.history import chart_points, merge, series
from bench.analysis.identity import identity_rows, machine, scaling_rows
from bench.analysis.instrument import mixed_compile_note
from bench.analysis.metrics import HEADLINE, METRIC_BY_KEY, fmt
from bench.analysis.run_index import IndexedRun
from bench.analysis.select_compare import select_and_compare
from bench.analysis.stats import BOOTSTRAP_RESAMPLES
from bench.analysis.time_sums import env_lacked
from bench.atomic_files import disk_full_error, is_disk_full, locked, replace_dir, sweep_temp_dirs, temp_dir
from bench.records.read import RunData
from bench.render import charts, timeline_section
from bench.render.busy import busy_list, busy_summary_lines, busy_table
from bench.render.chart_notes import history_note, series_note
from bench.render.escape import code, md
from bench.render.headline import end_to_end_lines
from bench.render.index import SUMMARY_JSON, write_index
from bench.render.labels import series_title
from bench.render.runs_csv import write_runs_csv
from bench.render.tables import (
    excluded_table,
    identity_table,
    pairs_table,
    runs_table,
    scaling_table,
    shape_note,
    summary_table,
    verdicts,
)


@dataclass
class ReportResult:
    folder: Path
    readme: Path
    index: Path
    compared: CompareResult


def _utc(t: float | None, fmt_: str = "%Y-%m-%d %H:%M") -> str:
    return time.strftime(fmt_, time.gmtime(t)) if t is not None else "unknown"


def _chart_order(runs: list[RunData], result: CompareResult) -> dict[str, list[RunData]]:
    """Per env, its compared runs ordered from the median images/s outwards: a chart
    takes the first that recorded its series, so no environment is dropped because the
    median run happens to lack it."""
    rep = _representative(runs, result)
    ips = {(m.env, m.run_id): m.images_per_s for m in result.runs}
    out: dict[str, list[RunData]] = {}
    for env in result.envs:
        first = rep.get(env)
        centre = ips.get((env, first.run_id)) if first is not None else None
        ranked = []
        for r in (r for r in runs if r.env == env):
            v = ips.get((env, r.run_id))
            far = abs(v - centre) if v is not None and centre is not None else float("inf")
            ranked.append((r is not first and centre is not None, far, r.run_id, r))  # none rated: by run id
        out[env] = [t[-1] for t in sorted(ranked, key=lambda t: t[:3])]
    return out


def _series_per_env(
    order: dict[str, list[RunData]], key: str
) -> tuple[dict[str, tuple[Any, Any]], dict[str, str], list[str]]:
    """(env -> series, env -> run id drawn, envs with no run that has the series)."""
    lines: dict[str, tuple[Any, Any]] = {}
    used: dict[str, str] = {}
    lacking: list[str] = []
    for env, candidates in sorted(order.items()):
        for run in candidates:
            x, y = charts.series(run, key)
            if len(x) and bool(np.isfinite(np.asarray(y, dtype=float)).any()):
                lines[env], used[env] = (x, y), run.run_id
                break
        else:
            lacking.append(env)
    return lines, used, lacking


def _representative(runs: list[RunData], result: CompareResult) -> dict[str, RunData]:
    """Per env, the run with the median images/s (else the first run with samples)."""
    metrics = {(m.env, m.run_id): m for m in result.runs}
    out: dict[str, RunData] = {}
    for env in result.envs:
        mine = [r for r in runs if r.env == env]
        rated = sorted(
            (metrics[(env, r.run_id)].images_per_s, r.run_id, r)
            for r in mine
            if metrics[(env, r.run_id)].images_per_s is not None
        )
        if rated:
            out[env] = rated[(len(rated) - 1) // 2][2]
        else:
            with_samples = [r for r in mine if r.samples or r.train.events]
            if with_samples:
                out[env] = with_samples[0]
    return out


def _provenance(runs: list[RunData], envs: list[str]) -> list[tuple[str, list[str]]]:
    def distinct(env: str, get: Callable[[dict[str, Any]], Any]) -> str:
        values: list[str] = []
        for r in runs:
            if r.env != env or not r.meta:
                continue
            try:
                v = get(r.meta)
            except (KeyError, TypeError, AttributeError, IndexError):
                v = None
            text = "—" if v in (None, "", []) else md(v)
            if text not in values:
                values.append(text)
        return ", ".join(values) if values else "—"

    def gpus(meta: dict[str, Any]) -> str:
        gs = meta["hardware"]["gpus"]
        if gs is None:
            return None  # not recorded (an import without GPU files): unknown, not "none"
        if not gs:
            return "none"
        models = Counter(str(g.get("model") or "unknown model") for g in gs)
        return ", ".join(f"{n} × {m}" for m, n in sorted(models.items()))

    rows: list[tuple[str, Callable[[dict[str, Any]], Any]]] = [
        ("hosts", lambda m: ", ".join(m["hosts"])),
        ("CPU model", lambda m: m["hardware"]["cpu_model"]),
        ("logical cores", lambda m: m["hardware"]["cpu_cores_logical"]),
        ("memory (GB)", lambda m: fmt(m["hardware"]["memory_bytes"] / 1e9)),
        ("cgroup CPU limit (cores)", lambda m: m["hardware"]["cgroup"]["cpu_limit_cores"]),
        (
            "cgroup memory limit (GB)",
            lambda m: (
                fmt(m["hardware"]["cgroup"]["memory_limit_bytes"] / 1e9)
                if m["hardware"]["cgroup"]["memory_limit_bytes"]
                else None
            ),
        ),
        ("GPUs", gpus),
        ("GPU driver", lambda m: m["hardware"]["gpus"][0]["driver"]),
        ("python", lambda m: m["software"]["python"]),
        ("torch", lambda m: m["software"].get("torch")),
        (
            "CUDA / cuDNN",
            lambda m: (
                f"{m['software'].get('cuda')} / {m['software'].get('cudnn')}" if m["software"].get("cuda") else None
            ),
        ),
        ("git sha (dirty)", lambda m: f"{m['git']['sha'][:12]} ({'dirty' if m['git']['dirty'] else 'clean'})"),
        ("image", lambda m: m["image"]["digest"] or m["image"]["ref"]),
        ("scheduler", lambda m: m["scheduler"]["kind"]),
        ("config sha256", lambda m: m["config_sha256"][:16]),
    ]
    return [(label, [distinct(env, get) for env in envs]) for label, get in rows]


def _history_entries(index: list[IndexedRun], envs: list[str], kept: list[dict] | None) -> list[dict]:
    """History entries of the report's environments: the run index of the results folder
    (bench.analysis.run_index), and every run the results branch keeps (`kept`,
    bench/gitops/results_branch.py)."""
    local = [r.entry for r in index if r.env in envs and r.git_sha]
    return [e for e in merge(local, kept or []) if e.get("env") in envs]


def _change_lines(entries: list[dict], result: CompareResult) -> list[str]:
    """One line per confirmed change point of a headline metric in the report's experiment."""
    lines = []
    for key, points in sorted(series(entries).items()):
        env, experiment, metric = key
        if metric not in HEADLINE or (result.experiment and experiment != result.experiment):
            continue
        label = METRIC_BY_KEY[metric].label
        for cp in change_points(key, points):
            lines.append(
                f"{cp.change_text} {md(label)} on {md(env)} at `{code(cp.commit[:7])}` "
                f"({fmt(cp.before)} → {fmt(cp.after)}, p = {cp.p_value:.2g}): {md(cp.changed, 400)}"
            )
    return lines


def _draw_charts(
    folder: Path, runs: list[RunData], result: CompareResult, entries: list[dict], branch_read: bool = False
) -> tuple[list[dict[str, str]], list[str]]:
    """Every chart of the catalogue that has data, the summary bars and the history: (drawn, missing)."""
    for old in folder.glob("*.png"):
        old.unlink()
    order = _chart_order(runs, result)
    # what the captions say: each env's runs with their images/s, and its median-images/s run (if any)
    rep, ips = _representative(runs, result), {(m.env, m.run_id): m.images_per_s for m in result.runs}
    rated = {e: [(r.run_id, ips.get((e, r.run_id))) for r in rs] for e, rs in order.items()}
    median_runs = {e: r.run_id if (r := rep.get(e)) and ips.get((e, r.run_id)) is not None else None for e in order}
    chart_list, missing = [], []
    for key, metric in charts.SERIES.items():
        title = metric.timeseries.title
        lines, used, lacking = _series_per_env(order, key)
        # A run with only the whole machine's columns (imports) draws a line labelled "(host)".
        drawn = {e: next(r for r in order[e] if r.run_id == run_id) for e, run_id in used.items()}
        host = {e for e, r in drawn.items() if charts.from_host(r, key)}
        lines = {f"{e} (host)" if e in host else e: xy for e, xy in lines.items()}
        title = series_title(key, title, len(host), len(lines))
        if not charts.timeseries_chart(lines, key, folder / f"{key}.png", title=title):
            missing.append(title)
            continue
        note = series_note(used, rated, median_runs, lacking)
        chart_list.append({"title": title, "file": f"{key}.png", "note": note})
    bars = {
        k: {env: [v for m in result.runs if m.env == env and (v := getattr(m, k)) is not None] for env in result.envs}
        for k in HEADLINE
    }
    labels = {k: f"{METRIC_BY_KEY[k].label} ({METRIC_BY_KEY[k].unit})" for k in HEADLINE}
    summaries = result.summaries
    below = {k: {e: summaries[e].below[k] for e in result.envs if k in summaries[e].below} for k in HEADLINE}
    lacked = {k: {e: x for e in result.envs if (x := env_lacked(result.runs, e, k))} for k in HEADLINE}
    if charts.summary_bars(bars, labels, folder / "summary.png", below, lacked):
        chart_list.append(
            {
                "title": "Summary: median per environment, whiskers min–max",
                "file": "summary.png",
                "note": "Median per environment; whiskers span the fastest to the slowest run.",
            }
        )
    points = chart_points(entries, result.envs)
    if charts.history_chart(points, folder / "history.png"):
        note = history_note(points, branch_read)
        chart_list.append({"title": "History of images/s across commits", "file": "history.png", "note": note})
    return chart_list, missing


def _problems(runs: list[RunData], sha: str | None) -> list[tuple[str, list[str]]]:
    problems = [
        (code(f"{r.env}/{r.run_id}"), [md(p, 400) for p in r.problems])
        for r in sorted(runs, key=lambda r: (r.env, r.run_id))
        if r.problems
    ]
    # No git sha (imports) is no problem of a record, so it is said under Provenance, not here:
    # Data problems lists exactly what `bench check` prints.
    return problems


def _readme(name: str, sha: str | None, runs: list[RunData], result: CompareResult, results: Path, **parts: Any) -> str:
    """The report's Markdown (templates.REPORT), blank-line runs squeezed."""
    starts = [r.start_time for r in runs if r.start_time is not None]
    cost_notes = [
        (md(env), md("; ".join(sorted({m.cost_note for m in result.runs if m.env == env})), 600)) for env in result.envs
    ]
    env_tpl = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
    text = env_tpl.from_string(_template()).render(
        title=name,
        commit=code(sha[:12]) if sha else "unknown",
        experiment=code(result.experiment or "unknown"),
        n_runs=len(runs),
        n_compared=len(result.runs),
        excluded_table=excluded_table(result.excluded),
        envs=[md(e) for e in result.envs],
        first_start=_utc(min(starts)) if starts else "unknown",
        last_start=_utc(max(starts)) if starts else "unknown",
        results=code(results.name),
        busy=busy_list(result),
        busy_table=busy_table(result),
        summary=[*end_to_end_lines(result), *busy_summary_lines(result), *verdicts(result)]
        or [*mixed_compile_note(result.runs), *_single_env_summary(result)],
        pairs_table=pairs_table(result),
        pairs_env=code(", ".join(e for e in result.envs if e != result.baseline)),
        baseline=code(result.baseline),
        resamples=BOOTSTRAP_RESAMPLES,
        summary_table=summary_table(result),
        cost_notes=cost_notes,
        runs_table=runs_table(result),
        advice=[(md(env), [md(n, 600) for n in notes]) for env, notes in sorted(advise(result).items())],
        provenance=_provenance(runs, result.envs),
        shape_note=shape_note(result.runs),
        scaling_table=scaling_table(scaling_rows(result.runs)),
        **parts,
    )
    text = "\n".join(line.rstrip() for line in text.splitlines()).rstrip() + "\n"
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text


def _dirty(run: RunData) -> bool:
    git = run.meta.get("git")
    return isinstance(git, dict) and git.get("dirty") is True


def write_report(
    results: Path,
    out: Path,
    commit: str | None = None,
    envs: list[str] | None = None,
    allow_different: bool = False,
    baseline: str | None = None,
    only: set[Path] | None = None,
    allow_dirty: bool = False,
    history: list[dict] | None = None,
    index: list[IndexedRun] | None = None,
) -> ReportResult:
    """Report one commit's runs (or exactly the run folders in `only`, as `bench demo`
    does for the runs it just made); the history chart uses every run in `results`
    (`index`: the run index, already read) and the
    `history` entries of the results branch. Reading, selecting and comparing is
    bench.analysis.select_compare's; this module draws and writes."""
    results, out = Path(results), Path(out)
    selected = select_and_compare(results, envs, commit, only, allow_different, baseline, allow_dirty, index)
    sha, runs, index, result = selected.sha, selected.runs, selected.index, selected.result
    compared = {(m.env, m.run_id) for m in result.runs}
    chosen = [r for r in runs if (r.env, r.run_id) in compared]
    starts = [r.start_time for r in runs if r.start_time is not None]
    name = f"{_utc(max(starts), '%Y-%m-%d') if starts else 'undated'}-{sha[:7] if sha else 'nogit'}"
    if not starts or not sha:
        # Date and sha do not tell such reports apart (imports, records without git):
        # the runs' own bytes do, so the name is unique and the same for the same runs.
        name += f"-{content_hash(runs)}"
    final = out / name
    try:
        with locked(out):  # one report at a time per folder: a second one waits, then rewrites it
            sweep_temp_dirs(out)  # left by a report killed half-way
            folder = temp_dir(final)  # built aside, renamed into place whole (never a 0-byte README.md)
            try:
                _write_folder(folder, name, sha, runs, index, chosen, result, results, starts, history)
                replace_dir(folder, final)
                index = write_index(out)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
    except OSError as exc:
        if is_disk_full(exc):
            raise disk_full_error(exc, final) from None
        raise
    return ReportResult(final, final / "README.md", index, result)


def _write_folder(
    folder: Path,
    name: str,
    sha: str | None,
    runs: list[RunData],
    index: list[IndexedRun],
    chosen: list[RunData],
    result: CompareResult,
    results: Path,
    starts: list[float],
    history: list[dict] | None = None,
) -> None:
    """Every file of one report, into the hidden `folder` (the caller renames it into place)."""
    entries = _history_entries(index, result.envs, history)
    with charts.drawn_in_parallel():
        chart_list, missing = _draw_charts(folder, chosen, result, entries, history is not None)
    problems = _problems(runs, sha)
    (folder / "README.md").write_text(
        _readme(
            name,
            sha,
            runs,
            result,
            results,
            charts=chart_list,
            missing_charts=missing,
            problems=problems,
            dirty=any(_dirty(r) for r in chosen),
            identity_table=identity_table(identity_rows(chosen, result.envs, result.runs), result.envs),
            expected=[md(f.describe(), 600) for f in _outside_band(chosen, result)],
            changes=_change_lines(entries, result),
            **timeline_section.section(result, chosen, folder),  # after _draw_charts, which clears *.png
            crosscheck=[f"`{code(f'{f.env}/{f.run_id}')}`: {md(f.text, 600)}" for f in cross_check_runs(chosen)],
        )
    )
    write_runs_csv(result.frame(), folder / "runs.csv")
    excluded = pd.DataFrame([asdict(e) for e in result.excluded], columns=["env", "run_id", "reason"])
    excluded.to_csv(folder / "excluded.csv", index=False)
    summary = {
        "folder": name,
        "commit": sha,
        "envs": result.envs,
        "runs": len(runs),
        "experiment": [result.experiment] if result.experiment else [],
        "problems": sum(len(p) for _, p in problems),
        "images_per_s": {e: result.summaries[e].median["images_per_s"] for e in result.envs},
        "time_to_train_s": {e: result.summaries[e].median["time_to_train_s"] for e in result.envs},
        "first_start": min(starts) if starts else None,
        "machines": {e: machine(chosen, result.runs, e) for e in result.envs},
    }
    (folder / SUMMARY_JSON).write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    os.chmod(folder, 0o755)  # mkdtemp makes 0700; a report folder is for everyone to read


def _outside_band(chosen: list[RunData], result: CompareResult) -> list:
    """Figures of the compared runs outside their environment's expected band (clusters/<env>/expected.yaml)."""
    from bench.analysis.expected import outside

    experiment = {(r.env, r.run_id): r.meta.get("experiment") for r in chosen}
    return outside([(m.env, m.run_id, experiment.get((m.env, m.run_id)), m.values) for m in result.runs])


def content_hash(runs: list[RunData]) -> str:
    """10 hex digits of a sha256 over the runs' env, id and record files (regular files
    only: a link or a FIFO planted in a results tree is never followed or read)."""
    h = hashlib.sha256()
    for r in sorted(runs, key=lambda r: (r.env, r.run_id)):
        h.update(f"{r.env}/{r.run_id}\n".encode())
        for f in sorted(r.path.iterdir()) if r.path.is_dir() and not r.path.is_symlink() else []:
            if not stat.S_ISREG(f.lstat().st_mode):
                continue
            with f.open("rb") as fh:
                h.update(f.name.encode() + b"\0" + hashlib.file_digest(fh, "sha256").digest())
    return h.hexdigest()[:10]


def _template() -> str:
    from bench.render.templates import REPORT

    return REPORT


def _single_env_summary(result: CompareResult) -> list[str]:
    lines = []
    for env in result.envs:
        s = result.summaries[env]
        lines.append(
            f"{md(env)}: {s.runs} run(s), median {fmt(s.median['images_per_s'])} images/s, "
            f"time to train {fmt(s.median['time_to_train_s'])} s (only one environment: nothing to compare against)."
        )
    return lines if len(result.envs) == 1 else []
