"""Markdown tables and plain-language sentences of a comparison (`bench.analysis.compare`).

Every row and column comes from the metric catalogue (`bench.analysis.metrics.METRICS`):
its label, unit, digits, and whether it belongs in the summary or the per-run table.
"""

from __future__ import annotations

import math

from bench.analysis.comparable import Excluded
from bench.analysis.compare import CompareResult, is_clear
from bench.analysis.metrics import METRIC_BY_KEY, METRICS, Metric, RunMetrics, fmt
from bench.render.escape import md


def _ratio_words(metric: Metric, ratio: float) -> tuple[str, float]:
    """('faster'/'slower'..., factor >= 1) for `env_a` relative to `env_b`."""
    factor = ratio if ratio >= 1 else 1 / ratio
    if metric.unit == "s":  # a duration
        word = "longer" if ratio > 1 else "shorter"
    elif metric.unit == "img/s":  # a rate of work
        word = "faster" if ratio > 1 else "slower"
    else:
        word = "higher" if ratio > 1 else "lower"
    return word, factor


def verdicts(result: CompareResult) -> list[str]:
    """Plain-language sentences: who won on what, by how much, and how sure we are."""
    out: list[str] = []
    for p in result.pairs:
        metric = METRIC_BY_KEY[p.metric]
        st = p.stats
        va = result.summaries[p.env_a].median[p.metric]
        vb = result.summaries[p.env_b].median[p.metric]
        if va is None or vb is None:
            continue
        if st.ratio is None or st.ratio <= 0 or not math.isfinite(st.ratio):
            out.append(
                f"{metric.label}: {md(p.env_a)} {fmt(va, metric.digits)} {metric.unit} vs "
                f"{md(p.env_b)} {fmt(vb, metric.digits)} {metric.unit} (median; no ratio with a zero)."
            )
            continue
        if abs(st.ratio - 1) < 1e-9:
            out.append(f"{metric.label}: {md(p.env_a)} and {md(p.env_b)} are the same (median).")
            continue
        word, factor = _ratio_words(metric, st.ratio)
        better = None
        if metric.higher_is_better is not None:
            better = p.env_a if (st.ratio > 1) == metric.higher_is_better else p.env_b
        sure = []
        if st.ci_low is not None and st.ci_high is not None:
            sure.append(f"95% CI of the ratio {fmt(st.ci_low)}–{fmt(st.ci_high)}")
        if st.p_value is not None:
            sure.append(f"Mann–Whitney p = {fmt(st.p_value, 2)}")
        else:
            sure.append(f"too few runs for a test ({st.n_a} vs {st.n_b}; need 3 each)")
        significant = is_clear(st)
        verdict = (
            f" — {md(better)} wins"
            if better and significant
            else (" — not a clear difference" if st.p_value is not None else "")
        )
        out.append(
            f"{metric.label}: {md(p.env_a)} is {fmt(factor)}× {word} than {md(p.env_b)} ({'; '.join(sure)}){verdict}."
        )
    return out


HOST_NOTE = (
    "(host): the whole machine's CPU or used memory, from host columns: the record has no "
    "process-tree columns (e.g. imported sar logs), so it includes everything else the node ran."
)


def host_mark(runs: list[RunMetrics], key: str) -> str:
    """ " (host)" when any of these runs' figure for `key` is the whole machine's."""
    return " (host)" if any(r.from_host(key) for r in runs) else ""


def summary_table(result: CompareResult) -> str:
    """Markdown: one row per metric, per environment median and olympic mean."""
    head = "| metric | unit | " + " | ".join(f"{md(e)} median | {md(e)} olympic" for e in result.envs) + " |"
    sep = "|---|---|" + "---:|---:|" * len(result.envs)
    rows = [head, sep, "| runs |  | " + " | ".join(f"{result.summaries[e].runs} | " for e in result.envs) + "|"]
    for m in METRICS:
        if not m.in_summary:
            continue
        cells = []
        for e in result.envs:
            s = result.summaries[e]
            mark = host_mark([r for r in result.runs if r.env == e], m.key) if s.median[m.key] is not None else ""
            cells.append(f"{fmt(s.median[m.key], m.digits)}{mark} | {fmt(s.olympic[m.key], m.digits)}{mark}")
        rows.append(f"| {m.label} | {m.unit} | " + " | ".join(cells) + " |")
    if any(r.from_host(k) for r in result.runs for k in r.origins):
        rows.extend(["", HOST_NOTE])
    return "\n".join(rows)


def runs_table(result: CompareResult) -> str:
    cols = [m.key for m in METRICS if m.in_runs_table]
    head = "| env | run | status | " + " | ".join(METRIC_BY_KEY[c].label for c in cols) + " |"
    rows = [head, "|---|---|---|" + "---:|" * len(cols)]
    for r in result.runs:
        vals = " | ".join(fmt(getattr(r, c), METRIC_BY_KEY[c].digits) + host_mark([r], c) for c in cols)
        rows.append(f"| {md(r.env)} | {md(r.run_id)} | {md(r.status or '—')} | {vals} |")
    return "\n".join(rows)


def pairs_table(result: CompareResult) -> str:
    if not result.pairs:
        return ""
    rows = [
        "| metric | env | vs | ratio of medians | 95% CI | Mann–Whitney p | runs |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for p in result.pairs:
        st = p.stats
        ci = f"{fmt(st.ci_low)}–{fmt(st.ci_high)}" if st.ci_low is not None else "—"
        rows.append(
            f"| {METRIC_BY_KEY[p.metric].label} | {md(p.env_a)} | {md(p.env_b)} | {fmt(st.ratio)} | {ci} | "
            f"{fmt(st.p_value, 2)} | {st.n_a} vs {st.n_b} |"
        )
    return "\n".join(rows)


def excluded_table(excluded: list[Excluded]) -> str:
    """Markdown: one row per excluded run with its reason ("" when none)."""
    if not excluded:
        return ""
    rows = ["| env | run | why it is not compared |", "|---|---|---|"]
    rows += [f"| {md(e.env)} | {md(e.run_id)} | {md(e.reason, 400)} |" for e in excluded]
    return "\n".join(rows)
