"""The report's words on runs that shared a busy host (bench.analysis.contention): which runs,
and the headline figures with and without them, so a busy host is not read as a slow platform."""

from __future__ import annotations

from bench.analysis.metrics import METRIC_BY_KEY, fmt
from bench.analysis.report_data import Busy, BusyEffect
from bench.render.escape import code, md


def busy_list(busy: Busy) -> list[tuple[str, str]]:
    """(`env/run`, why) of each compared run whose host was busy with other work."""
    return [(code(f"{env}/{run_id}"), md(why, 600)) for env, run_id, why in busy.runs]


def busy_summary_lines(busy: Busy) -> list[str]:
    """One Summary line per environment with busy runs: how many, and that its figures
    (medians, ratios, verdicts) include them."""
    out = []
    for env, n, total in busy.per_env:
        out.append(
            f"Busy host: {n} of {total} compared run(s) of {md(env)} shared their machine with other work; "
            "the figures here include them (medians with and without them under *Runs on a busy host*)."
        )
    return out


def _change(e: BusyEffect) -> str:
    if e.all_median is None or e.quiet_median is None or e.quiet_median == 0:
        return "—"
    return f"{(e.all_median / e.quiet_median - 1) * 100:+.1f} %"


def busy_table(busy: Busy) -> str:
    """Markdown: per environment with busy runs, each headline figure's median over all its
    runs and over the quiet ones ("no quiet run" where every run was busy); empty when none."""
    rows = busy.effects
    if not rows:
        return ""
    lines = [
        "| env | figure | unit | median, all runs | median, quiet runs only | busy runs' effect |",
        "|---|---|---|---:|---:|---:|",
    ]
    for e in rows:
        metric = METRIC_BY_KEY[e.metric]
        quiet = f"{fmt(e.quiet_median, metric.digits)} (n = {e.quiet_runs})" if e.quiet_runs else "no quiet run"
        lines.append(
            f"| {md(e.env)} | {metric.label} | {metric.unit} | {fmt(e.all_median, metric.digits)} (n = {e.runs}) "
            f"| {quiet} | {_change(e)} |"
        )
    return "\n".join(lines)
