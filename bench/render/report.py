"""`bench report`: Markdown + charts for one commit's runs, and the index of reports.

Output: `<out>/<date>-<shortsha>/` (README.md, charts, summary.json, runs.csv) and
`<out>/README.md`. What the report shows is decided by bench.analysis.report_data (a
`ReportData`); this module only draws and writes it. Date and sha come from the runs
themselves, never from "now", and all numbers go through `fmt`, so the same results give
the same bytes.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import jinja2
import numpy as np
import pandas as pd

from bench.analysis.metrics import HEADLINE, METRIC_BY_KEY, fmt
from bench.analysis.report_data import CompareResult, ReportData, utc
from bench.atomic_files import disk_full_error, is_disk_full, locked, replace_dir, sweep_temp_dirs, temp_dir
from bench.records.read import RunData
from bench.render import charts, timeline_section
from bench.render.busy import busy_list, busy_summary_lines, busy_table
from bench.render.chart_notes import history_note, series_note
from bench.render.escape import code, md
from bench.render.explain import sentence
from bench.render.headline import end_to_end_lines
from bench.render.index import SUMMARY_JSON, write_index
from bench.render.labels import series_title
from bench.render.noise_words import report_lines
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
from bench.render.templates import REPORT


@dataclass
class ReportResult:
    folder: Path
    readme: Path
    index: Path
    compared: CompareResult


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


def _draw_charts(folder: Path, data: ReportData) -> tuple[list[dict[str, str]], list[str]]:
    """Every chart of the catalogue that has data, the summary bars and the history: (drawn, missing)."""
    for old in folder.glob("*.png"):
        old.unlink()
    picks = data.picks
    chart_list, missing = [], []
    for key, metric in charts.SERIES.items():
        title = metric.timeseries.title
        lines, used, lacking = _series_per_env(picks.order, key)
        # A run with only the whole machine's columns (imports) draws a line labelled "(host)".
        drawn = {e: next(r for r in picks.order[e] if r.run_id == run_id) for e, run_id in used.items()}
        host = {e for e, r in drawn.items() if charts.from_host(r, key)}
        lines = {f"{e} (host)" if e in host else e: xy for e, xy in lines.items()}
        title = series_title(key, title, len(host), len(lines))
        if not charts.timeseries_chart(lines, key, folder / f"{key}.png", title=title):
            missing.append(title)
            continue
        note = series_note(used, picks.rated, picks.median, lacking)
        chart_list.append({"title": title, "file": f"{key}.png", "note": note})
    labels = {k: f"{METRIC_BY_KEY[k].label} ({METRIC_BY_KEY[k].unit})" for k in HEADLINE}
    if charts.summary_bars(picks.bars, labels, folder / "summary.png", picks.below, picks.lacked):
        chart_list.append(
            {
                "title": "Summary: median per environment, whiskers min–max",
                "file": "summary.png",
                "note": "Median per environment; whiskers span the fastest to the slowest run.",
            }
        )
    if charts.history_chart(picks.history, folder / "history.png"):
        note = history_note(picks.history, data.branch_read)
        chart_list.append({"title": "History of images/s across commits", "file": "history.png", "note": note})
    return chart_list, missing


def _provenance(data: ReportData) -> list[tuple[str, str]]:
    """Each row's values per environment, escaped and joined ("—" for a value not recorded)."""
    return [
        (label, [", ".join(dict.fromkeys("—" if v is None else md(v) for v in values)) or "—" for values in per_env])
        for label, per_env in data.provenance
    ]


def _change_line(c: Any) -> str:
    explained = f". Explained: {sentence(c.explained, markdown=True)}" if c.explained is not None else ""
    return (
        f"{c.change_text} {md(c.label)} on {md(c.env)} at `{code(c.commit[:7])}` "
        f"({fmt(c.before)} → {fmt(c.after)}, p = {c.p_value:.2g}): {md(c.changed, 400)}{explained}"
    )


def _single_env_lines(data: ReportData) -> list[str]:
    return [
        f"{md(env)}: {runs} run(s), median {fmt(ips)} images/s, "
        f"time to train {fmt(ttt)} s (only one environment: nothing to compare against)."
        for env, runs, ips, ttt in data.headline.single_env
    ]


def _readme(data: ReportData, **parts: Any) -> str:
    """The report's Markdown (templates.REPORT), blank-line runs squeezed."""
    result, runs, starts = data.result, data.runs, data.starts
    env_tpl = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
    text = env_tpl.from_string(REPORT).render(
        title=data.name,
        commit=code(data.sha[:12]) if data.sha else "unknown",
        experiment=code(result.experiment or "unknown"),
        n_runs=len(runs),
        n_compared=len(result.runs),
        excluded_table=excluded_table(result.excluded),
        envs=[md(e) for e in result.envs],
        first_start=utc(min(starts)) if starts else "unknown",
        last_start=utc(max(starts)) if starts else "unknown",
        results=code(data.results_name),
        busy=busy_list(data.busy),
        busy_table=busy_table(data.busy),
        summary=[*end_to_end_lines(data.headline), *busy_summary_lines(data.busy), *verdicts(result)]
        or [*data.headline.compile_notes, *_single_env_lines(data)],
        pairs_table=pairs_table(result),
        pairs_env=code(", ".join(e for e in result.envs if e != result.baseline)),
        baseline=code(result.baseline),
        resamples=data.resamples,
        summary_table=summary_table(result),
        cost_notes=[(md(env), md(note, 600)) for env, note in data.cost_notes],
        runs_table=runs_table(result),
        advice=[(md(env), [md(n, 600) for n in notes]) for env, notes in data.advice.items()],
        provenance=_provenance(data),
        shape_note=shape_note(result.runs),
        scaling_table=scaling_table(data.scaling),
        **parts,
    )
    text = "\n".join(line.rstrip() for line in text.splitlines()).rstrip() + "\n"
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text


def draw_report(data: ReportData, out: Path) -> ReportResult:
    """Write the report of `data` into `out/<data.name>/` and regenerate `out/README.md`, the
    index. The folder is built aside and renamed into place whole (never a 0-byte README.md);
    one report at a time per `out` folder."""
    out = Path(out)
    final = out / data.name
    try:
        with locked(out):  # one report at a time per folder: a second one waits, then rewrites it
            sweep_temp_dirs(out)  # left by a report killed half-way
            folder = temp_dir(final)
            try:
                _write_folder(folder, data)
                replace_dir(folder, final)
                index = write_index(out)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
    except OSError as exc:
        if is_disk_full(exc):
            raise disk_full_error(exc, final) from None
        raise
    return ReportResult(final, final / "README.md", index, data.result)


def _write_folder(folder: Path, data: ReportData) -> None:
    """Every file of one report, into the hidden `folder` (the caller renames it into place)."""
    result = data.result
    with charts.drawn_in_parallel():  # the Markdown is written while children draw the charts
        chart_list, missing = _draw_charts(folder, data)
        problems = [(code(run), [md(p, 400) for p in found]) for run, found in data.problems]
        (folder / "README.md").write_text(
            _readme(
                data,
                charts=chart_list,
                missing_charts=missing,
                problems=problems,
                dirty=data.dirty,
                identity_table=identity_table(data.identity, result.envs),
                expected=[md(f.describe(), 600) for f in data.outside],
                noise=report_lines(data.noise),
                changes=[_change_line(c) for c in data.changes],
                **timeline_section.section(result, data.chosen, folder),  # after _draw_charts, which clears *.png
                crosscheck=[f"`{code(f'{f.env}/{f.run_id}')}`: {md(f.text, 600)}" for f in data.crosscheck],
            )
        )
    write_runs_csv(result.frame(), folder / "runs.csv")
    excluded = pd.DataFrame([asdict(e) for e in result.excluded], columns=["env", "run_id", "reason"])
    excluded.to_csv(folder / "excluded.csv", index=False)
    (folder / SUMMARY_JSON).write_text(json.dumps(data.summary, indent=2, sort_keys=True) + "\n")
    os.chmod(folder, 0o755)  # mkdtemp makes 0700; a report folder is for everyone to read
