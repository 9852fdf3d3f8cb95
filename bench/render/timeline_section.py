"""The report's "Where the time goes": each environment's median run as a stacked bar
(`timeline.png`, with its total's spread), a table of the phases' medians, the named sums
of phases with their identities, and one line per environment for the PR comment.

Phases and their seconds come from the catalogue (`phase_<name>_s`, bench.analysis.
timeline_metrics), their sources and the reasons a phase is unknown from the run records'
`timeline`. Each phase has one colour on every chart.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from bench.analysis import time_sums as ts
from bench.analysis.metrics import METRIC_BY_KEY, RunMetrics
from bench.analysis.report_data import CompareResult
from bench.analysis.stats import median
from bench.records.read import RunData
from bench.records.timeline import ALL_PHASES, BETWEEN_ATTEMPTS, TRIGGER, phase_entry
from bench.render.escape import md
from bench.render.time_words import identity_lines, medians_note, seconds_text, spread_text
from bench.render.trace import write_trace

# One colour per phase, everywhere (matplotlib's tab10 order, fixed; the phases between a
# resumed run's attempts in shades of red and grey).
PHASE_COLOURS = dict(
    zip(ALL_PHASES, ("C8", "C0", "C1", "C6", "C3", "C4", "C5", "C2", "#d62728", "#ff9896", "#c7c7c7", "C7", "C9"))
)


def _key(phase: str) -> str:
    return f"phase_{phase}_s"


def phase_medians(result: CompareResult, env: str) -> dict[str, float | None]:
    """phase -> the environment's median seconds (None when no run knows it)."""
    return {p: result.summaries[env].median.get(_key(p)) for p in ALL_PHASES}


def _spread(result: CompareResult, env: str, key: str) -> str:
    values = [v for m in result.runs if m.env == env and (v := m.values.get(key)) is not None]
    return spread_text(values, ts.env_clock(result.runs, env, key))


def _cell(result: CompareResult, env: str, key: str) -> str:
    """The median at its clock's precision; "no scheduler" where the kind has no such phase."""
    value = result.summaries[env].median.get(key)
    lacked = ts.env_lacked(result.runs, env, key) if value is None else None
    return lacked or seconds_text(value, ts.env_clock(result.runs, env, key))


def _sources(runs: list[RunData], env: str, phase: str) -> tuple[str, str]:
    """(the phase's clock(s), the commonest reason it is unknown) over the env's records."""
    sources: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    for run in runs:
        if run.env != env:
            continue
        entry = phase_entry(run.meta.get("timeline"), phase)
        if entry is None:
            reasons["no timeline in the record (collected before timelines)"] += 1
        elif entry.get("seconds") is None:
            reasons[str(entry.get("reason") or "unknown")] += 1
        else:
            sources[str(entry.get("source") or "?")] += 1
    return ", ".join(sorted(sources)), (reasons.most_common(1)[0][0] if reasons else "")


def _ran(runs: list[RunData], env: str, phase: str) -> bool:
    return any(run.env == env and phase_entry(run.meta.get("timeline"), phase) is not None for run in runs)


def has_timeline(result: CompareResult) -> bool:
    return any(v is not None for env in result.envs for v in phase_medians(result, env).values())


def timeline_table(result: CompareResult, runs: list[RunData]) -> str:
    """Markdown: per environment and phase, the median, the spread (min–max), the source
    (or why it is unknown; a phase the kind does not have says so instead of a number);
    then the named sums (submit to result, platform overhead, push to result)."""
    if not has_timeline(result):
        return ""
    rows = ["| env | phase | median | spread (min–max) | source |", "|---|---|---:|---:|---|"]
    for env in result.envs:
        summary = result.summaries[env]
        for phase in ALL_PHASES:
            key = _key(phase)
            value = summary.median.get(key)
            if phase in (TRIGGER, *BETWEEN_ATTEMPTS) and not _ran(runs, env, phase):
                continue  # only a pushed run has a trigger, only a resumed run the phases between attempts
            source, reason = _sources(runs, env, phase)
            lacked = ts.env_lacked(result.runs, env, key) if value is None else None
            where = md(source) if value is not None else "" if lacked else f"unknown: {md(reason, 200)}"
            if lacked:
                where = f"the kind has none: {md(reason.split(': ', 1)[-1], 200)}"
            rows.append(f"| {md(env)} | {phase} | {_cell(result, env, key)} | {_spread(result, env, key)} | {where} |")
        for key in ("submit_to_result_s", "platform_overhead_s", "push_to_result_s"):
            if summary.median.get(key) is not None:
                label = METRIC_BY_KEY[key].label
                rows.append(f"| {md(env)} | **{label}** | {_cell(result, env, key)} | {_spread(result, env, key)} | |")
    return "\n".join(rows + attempts_rows(runs))


def attempts_rows(runs: list[RunData]) -> list[str]:
    """A resumed run's phases as they happened, attempt by attempt (after the table above)."""
    rows = []
    for label, phases in resumed_runs(runs):
        steps = [
            f"{e['phase']} {seconds_text(e['seconds'], e.get('resolution_s'))}"
            if isinstance(e.get("seconds"), (int, float))
            else f"{e['phase']} ?"
            for e in phases
            if e.get("seconds") is not None or e["phase"] not in ("stage", "pull")
        ]
        rows.append(f"\n**{md(label)}**, in order: " + md(" → ".join(steps), 4000))
    return rows


def env_lines(metrics: list[RunMetrics]) -> list[str]:
    """One line per environment (for the PR comment): median submit -> result and each known phase."""
    lines = []
    for env in sorted({m.env for m in metrics}):
        mine = [m for m in metrics if m.env == env]
        total = median([m.values.get("submit_to_result_s") for m in mine])
        medians = {p: median([m.values.get(_key(p)) for m in mine]) for p in ALL_PHASES}
        known = {p: v for p, v in medians.items() if v is not None}
        parts = [f"{p} {seconds_text(v, ts.env_clock(mine, env, _key(p)))}" for p, v in known.items()]
        if total is None and not parts:
            continue
        clock = ts.env_clock(mine, env, "submit_to_result_s")
        head = f"submit → result {seconds_text(total, clock)}: " if total is not None else ""
        lines.append(f"{md(env)}: {head}{', '.join(parts)}")
    return lines


def resumed_runs(runs: list[RunData]) -> list[tuple[str, list[dict[str, Any]]]]:
    """(label, its phases in order) of each run that ran in more than one attempt."""
    out = []
    for run in runs:
        timeline = run.meta.get("timeline")
        attempts = timeline.get("attempts") if isinstance(timeline, dict) else None
        if isinstance(attempts, list) and len(attempts) > 1:
            phases = [p for p in timeline.get("phases") or () if isinstance(p, dict) and p.get("phase") in ALL_PHASES]
            out.append((f"{run.env} {run.meta.get('run_id', '?')} ({len(attempts)} attempts)", phases))
    return out


def median_bar(result: CompareResult, runs: list[RunData], env: str) -> tuple[str, list[tuple[str, float]], list[str]]:
    """(y label, the phases drawn in order, what the kind has none of) for one environment:
    its median run's phases (they add up to its total), else the medians of the phases."""
    chosen = ts.median_run(result.runs, env)
    record = next((r for r in runs if chosen and (r.env, r.run_id) == (env, chosen.run_id)), None)
    if chosen is None or record is None:
        medians = phase_medians(result, env)
        return f"{env}\n(medians of phases)", [(p, v) for p, v in medians.items() if v], []
    timeline = record.meta.get("timeline")
    drawn, lacking = [], []
    for phase in ALL_PHASES:
        entry = phase_entry(timeline, phase)
        seconds = entry.get("seconds") if entry else None
        if isinstance(seconds, (int, float)) and seconds > 0:
            drawn.append((phase, float(seconds)))
        elif (label := ts.lacks(entry)) is not None:
            lacking.append(label)
    return f"{env}\n{chosen.run_id} (median of {chosen.runs})", drawn, lacking


def timeline_chart(result: CompareResult, path: Path, runs: list[RunData] | None = None) -> bool:
    """Horizontal stacked bars, one per environment: its median run's phases (the run whose
    whole trip is the median), in order, one colour per phase, a whisker spanning the
    fastest to the slowest run's total, and the phases its kind has none of written beside
    it ("queue: no scheduler"); then one bar per resumed run, its attempts' phases in the
    order they happened. False (and no file) when no run has a timeline."""
    if not has_timeline(result):
        return False
    from bench.render import charts
    from bench.render.charts import plt

    envs = list(result.envs)
    resumed = resumed_runs(runs or [])
    bars = [median_bar(result, runs or [], env) for env in envs]
    labels = [label for label, _, _ in bars] + [label for label, _ in resumed]
    fig, ax = plt.subplots(figsize=(9, 2.4 + 0.6 * len(labels)))
    drawn: set[str] = set()
    rows = [phases for _, phases, _ in bars] + [
        [(e["phase"], float(e["seconds"])) for e in phases if isinstance(e.get("seconds"), (int, float))]
        for _, phases in resumed
    ]
    for row, phases in enumerate(rows):
        at = 0.0
        for name, seconds in phases:
            if seconds <= 0:
                continue
            ax.barh(row, seconds, left=at, color=PHASE_COLOURS[name], height=0.6, edgecolor="white", linewidth=0.5,
                    label=None if name in drawn else name)  # fmt: skip
            drawn.add(name)
            at += seconds
    for row, env in enumerate(envs):
        chosen = ts.median_run(result.runs, env)
        end = sum(s for _, s in bars[row][1])
        if chosen is not None and chosen.runs > 1:
            ax.errorbar(chosen.total, row, xerr=[[chosen.total - chosen.low], [chosen.high - chosen.total]],
                        fmt="none", ecolor="black", capsize=4, linewidth=1)  # fmt: skip
            end = max(end, chosen.high)
        if bars[row][2]:
            ax.annotate(", ".join(bars[row][2]), (end, row), xytext=(6, 0), textcoords="offset points",
                        va="center", fontsize="x-small", color="dimgrey")  # fmt: skip
    ax.set_yticks(range(len(labels)), labels, fontsize="small")
    ax.invert_yaxis()
    ax.set_xlabel("seconds (each environment's median run; whisker: min–max of its total over the runs)")
    ax.set_title("Where the time goes: submit to result")
    ax.grid(True, axis="x", alpha=0.3)
    ax.margins(x=0.25)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), fontsize="small", frameon=False, ncol=7)
    charts.save(fig, path)  # inside `charts.drawn_in_parallel`, by a forked child
    return True


def chart_caption(result: CompareResult) -> str:
    """What the chart draws, per environment: the median run, its total and that total's spread."""
    parts = []
    for env in result.envs:
        chosen = ts.median_run(result.runs, env)
        if chosen is None:
            parts.append(f"{md(env)}: the medians of its phases (no run has every phase known)")
            continue
        label = ts.SUM_BY_KEY[chosen.key].label
        clock = ts.env_clock(result.runs, env, chosen.key)
        spread = (
            f", min–max {spread_text([chosen.low, chosen.high], clock)} s, IQR "
            f"{seconds_text(chosen.q1, clock, unit=False)}–{seconds_text(chosen.q3, clock)} over {chosen.runs} runs"
            if chosen.runs > 1
            else " (its only run)"
        )
        parts.append(f"{md(env)}: run `{chosen.run_id}`, {label} {seconds_text(chosen.total, clock)}{spread}")
    return (
        "Each bar is one environment's median run (the run whose whole trip is the median; of an even count, "
        "the lower middle), so its phases add up to its total; the whisker spans the fastest to the slowest "
        "run's total. " + "; ".join(parts) + "."
    )


def section(result: CompareResult, runs: list[RunData], folder: Path) -> dict[str, Any]:
    """What the report template needs: the table, and whether timeline.png and the trace were written."""
    drawn = timeline_chart(result, folder / "timeline.png", runs)
    traced = write_trace(runs, folder)
    timelines = {(r.env, r.run_id): r.meta.get("timeline") for r in runs}
    medians = {env: phase_medians(result, env) for env in result.envs}
    return {
        "timeline_table": timeline_table(result, runs),
        "timeline_chart": drawn,
        "timeline_caption": chart_caption(result) if drawn else "",
        "timeline_sums": identity_lines(result.runs, timelines, result.envs),
        "timeline_medians": medians_note(result.runs, medians, result.envs),
        "timeline_trace": traced,
    }
