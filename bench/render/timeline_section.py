"""The report's "Where the time goes": each environment's median phases, as a stacked
bar (`timeline.png`), a table and one line per environment for the PR comment.

Phases and their seconds come from the catalogue (`phase_<name>_s`, bench.analysis.
timeline_metrics), their sources and the reasons a phase is unknown from the run records'
`timeline`. Each phase has one colour on every chart.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from bench.analysis.compare import CompareResult
from bench.analysis.metrics import METRIC_BY_KEY, RunMetrics, fmt
from bench.analysis.stats import median
from bench.records.read import RunData
from bench.records.timeline import ALL_PHASES, BETWEEN_ATTEMPTS, TRIGGER, phase_entry
from bench.render.escape import md
from bench.render.tables import shown
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


def _spread(result: CompareResult, env: str, phase: str) -> str:
    values = [v for m in result.runs if m.env == env and (v := m.values.get(_key(phase))) is not None]
    if len(values) < 2:
        return "—"
    return f"{fmt(min(values))}–{fmt(max(values))}"


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
    (or why it is unknown); then time from submit to result and the platform overhead."""
    if not has_timeline(result):
        return ""
    rows = ["| env | phase | median | spread (min–max) | source |", "|---|---|---:|---:|---|"]
    for env in result.envs:
        summary = result.summaries[env]
        for phase in ALL_PHASES:
            metric = METRIC_BY_KEY[_key(phase)]
            value = summary.median.get(metric.key)
            if phase in (TRIGGER, *BETWEEN_ATTEMPTS) and not _ran(runs, env, phase):
                continue  # only a pushed run has a trigger, only a resumed run the phases between attempts
            source, reason = _sources(runs, env, phase)
            where = md(source) if value is not None else f"unknown: {md(reason, 200)}"
            text = shown(value, metric, summary.below.get(metric.key), unit=True)
            rows.append(f"| {md(env)} | {phase} | {text} | {_spread(result, env, phase)} | {where} |")
        for key in ("submit_to_result_s", "platform_overhead_s", "push_to_result_s"):
            metric, value = METRIC_BY_KEY[key], summary.median.get(key)
            if value is not None:
                text = shown(value, metric, summary.below.get(key), unit=True)
                rows.append(f"| {md(env)} | **{metric.label}** | {text} | {_spread_key(result, env, key)} | |")
    return "\n".join(rows + attempts_rows(runs))


def attempts_rows(runs: list[RunData]) -> list[str]:
    """A resumed run's phases as they happened, attempt by attempt (after the table above)."""
    rows = []
    for label, phases in resumed_runs(runs):
        steps = [
            f"{e['phase']} {fmt(e['seconds'])} s" if isinstance(e.get("seconds"), (int, float)) else f"{e['phase']} ?"
            for e in phases
            if e.get("seconds") is not None or e["phase"] not in ("stage", "pull")
        ]
        rows.append(f"\n**{md(label)}**, in order: " + md(" → ".join(steps), 4000))
    return rows


def _spread_key(result: CompareResult, env: str, key: str) -> str:
    values = [v for m in result.runs if m.env == env and (v := m.values.get(key)) is not None]
    return f"{fmt(min(values))}–{fmt(max(values))}" if len(values) >= 2 else "—"


def env_lines(metrics: list[RunMetrics]) -> list[str]:
    """One line per environment (for the PR comment): median submit -> result and each known phase."""
    lines = []
    for env in sorted({m.env for m in metrics}):
        mine = [m for m in metrics if m.env == env]
        total = median([m.values.get("submit_to_result_s") for m in mine])
        medians = {p: median([m.values.get(_key(p)) for m in mine]) for p in ALL_PHASES}
        parts = [f"{p} {fmt(v)} s" for p, v in medians.items() if v is not None]
        if total is None and not parts:
            continue
        head = f"submit → result {fmt(total)} s: " if total is not None else ""
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


def timeline_chart(result: CompareResult, path: Path, runs: list[RunData] | None = None) -> bool:
    """Horizontal stacked bars, one per environment: its median of each known phase, in
    order, one colour per phase; then one bar per resumed run, its attempts' phases in the
    order they happened (queue, launch, warm-up and train again after each `preempted` and
    `requeue`/`resubmit`). False (and no file) when no run has a timeline."""
    if not has_timeline(result):
        return False
    from bench.render.charts import DPI, PNG_METADATA, plt

    envs = list(result.envs)
    resumed = resumed_runs(runs or [])
    labels = envs + [label for label, _ in resumed]
    fig, ax = plt.subplots(figsize=(8, 1.6 + 0.5 * len(labels)))
    left = np.zeros(len(envs))
    drawn: set[str] = set()
    for phase in ALL_PHASES:
        widths = np.asarray([phase_medians(result, e)[phase] or 0.0 for e in envs], dtype=float)
        if not widths.any():
            continue
        ax.barh(range(len(envs)), widths, left=left, color=PHASE_COLOURS[phase], label=phase, height=0.6)
        drawn.add(phase)
        left += widths
    for row, (_, phases) in enumerate(resumed, start=len(envs)):
        at = 0.0
        for entry in phases:
            seconds = entry.get("seconds")
            if not isinstance(seconds, (int, float)) or seconds <= 0:
                continue
            name = entry["phase"]
            ax.barh(row, seconds, left=at, color=PHASE_COLOURS[name], height=0.6, edgecolor="white", linewidth=0.5,
                    label=None if name in drawn else name)  # fmt: skip
            drawn.add(name)
            at += float(seconds)
    ax.set_yticks(range(len(labels)), labels, fontsize="small")
    ax.invert_yaxis()
    ax.set_xlabel("seconds (median per phase; resumed runs: each attempt in order; unknown phases left out)")
    ax.set_title("Where the time goes: submit to result")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small", frameon=False)
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=DPI, metadata=PNG_METADATA)
    plt.close(fig)
    return True


def section(result: CompareResult, runs: list[RunData], folder: Path) -> dict[str, Any]:
    """What the report template needs: the table, and whether timeline.png and the trace were written."""
    drawn = timeline_chart(result, folder / "timeline.png", runs)
    traced = write_trace(runs, folder)
    return {"timeline_table": timeline_table(result, runs), "timeline_chart": drawn, "timeline_trace": traced}
