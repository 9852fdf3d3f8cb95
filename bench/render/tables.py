"""Markdown tables and plain-language sentences of a comparison (`bench.analysis.compare`).

Every row and column comes from the metric catalogue (`bench.analysis.metrics.METRICS`):
its label, unit, digits, and whether it belongs in the summary or the per-run table.
"""

from __future__ import annotations

import math

from bench.analysis.metrics import METRIC_BY_KEY, METRICS, Metric, RunMetrics, fmt
from bench.analysis.report_data import (
    CLOCK_RESOLUTION_S,
    RESOLUTION_FACTOR,
    SIGNIFICANT_P,
    CompareResult,
    Comparison,
    Excluded,
    PairResult,
)
from bench.render.escape import code, md
from bench.render.labels import measured_label
from bench.render.noise_words import pair_detectable, pair_verdict
from bench.render.time_words import seconds_text


def _words(metric: Metric) -> tuple[str, str]:
    """(word when the ratio is above 1, word when below) for a metric's unit."""
    if metric.unit == "s":  # a duration
        return "longer", "shorter"
    if metric.unit in ("img/s", "img/s/GPU"):  # a rate of work
        return "faster", "slower"
    return "higher", "lower"


def change_words(metric: Metric, ratio: float) -> str:
    """The ratio as a change of env_a against env_b, the same way round as the ratio,
    in % of the baseline: 0.923 -> "7.7 % lower", 1.5 -> "50 % higher", 3.2 -> "220 % higher"."""
    up, down = _words(metric)
    pct = abs(ratio - 1) * 100
    return f"{fmt(pct, 2)} % {up if ratio > 1 else down}"


def shown(
    value: float | None,
    metric: Metric,
    resolution: float | None = None,
    unit: bool = False,
    clock: float | None = None,
    lacked: str | None = None,
) -> str:
    """A figure for people: "≤ 1 s" at or below its clock's `resolution`, a time rounded to
    its `clock`, "no scheduler" (`lacked`) where the kind has no such phase, else `fmt`."""
    if value is None and lacked:
        return lacked
    if value is not None and resolution is not None and value <= resolution:
        return f"≤ {resolution:g} {metric.unit}"
    if value is not None and clock is not None and metric.unit == "s":
        return seconds_text(value, clock, unit)
    return fmt(value, metric.digits) + (f" {metric.unit}" if unit and value is not None else "")


def ratio_text(st: Comparison) -> str:
    """`ratio R, 95 % CI L–H`: the table's numbers, in the table's direction (a ÷ b)."""
    parts = [f"ratio {fmt(st.ratio)}"]
    if st.ci_low is not None and st.ci_high is not None:
        parts.append(f"95 % CI {fmt(st.ci_low)}–{fmt(st.ci_high)}")
    return ", ".join(parts)


def verdicts(result: CompareResult) -> list[str]:
    """Plain-language sentences, one per row of the differences table, saying exactly it.

    One direction rule: the ratio is env ÷ baseline, the change is said that way round,
    and the interval printed is that ratio's. One "wins" rule: the Mann–Whitney p,
    adjusted by Benjamini–Hochberg over the comparison's metrics (compare.adjust_comparisons),
    at most SIGNIFICANT_P AND an interval that excludes 1 (and values finer than a clock tick)
    AND a difference beyond the pair's noise floor where one is known (bench.analysis.pair_noise:
    within it the sentence reads "within noise (±x %)"); runs too few for any p to reach
    SIGNIFICANT_P say so, with their counts, and a difference beyond the floor that is not
    clear says what the runs could have found (the minimum detectable effect).
    """
    out: list[str] = []
    for p in result.ordered_pairs():  # clear and large differences first
        metric = METRIC_BY_KEY[p.metric]
        st = p.stats
        va = result.summaries[p.env_a].median[p.metric]
        vb = result.summaries[p.env_b].median[p.metric]
        if va is None or vb is None:
            continue
        head = f"{metric.label}: {md(p.env_a)} vs {md(p.env_b)}"
        if p.at_resolution:
            below = [result.summaries[e].below.get(p.metric) for e in (p.env_a, p.env_b)]
            out.append(
                f"{head}: {shown(va, metric, below[0], True)} vs {shown(vb, metric, below[1], True)} "
                "(median; at or below the clock's resolution: no ratio or test)."
            )
            continue
        if st.ratio is None or st.ratio <= 0 or not math.isfinite(st.ratio):
            out.append(
                f"{head}: {fmt(va, metric.digits)} vs {fmt(vb, metric.digits)} {metric.unit} "
                "(median; no ratio with a zero)."
            )
            continue
        change = "the same median" if abs(st.ratio - 1) < 1e-9 else change_words(metric, st.ratio)
        sure = [ratio_text(st)]
        if st.p_value is not None:
            sure.append(f"Mann–Whitney p = {fmt(st.p_value, 2)}")
        if p.p_adjusted is not None:
            sure[-1] += f", BH-adjusted p = {fmt(p.p_adjusted, 2)} over {p.family} metric{'s' * (p.family != 1)}"
        if p.coarse:
            verdict = (
                f"not comparable: {', '.join(p.coarse)}'s values sit at the clock's {CLOCK_RESOLUTION_S:g} s resolution"
            )
        elif p.within_noise:
            verdict = pair_verdict(p.noise)
        elif not p.judgeable:
            verdict = (
                f"not enough runs to judge (n = {st.n_a} vs {st.n_b}; the smallest possible p is "
                f"{fmt(st.smallest_p, 2)}, a difference needs p ≤ {SIGNIFICANT_P:g})"
            ) + pair_detectable(p.noise, min(st.n_a, st.n_b), p.family)
        elif p.clear and metric.higher_is_better is not None:
            better = p.env_a if (st.ratio > 1) == metric.higher_is_better else p.env_b
            verdict = f"{md(better)} wins (BH-adjusted p ≤ {SIGNIFICANT_P:g} and the interval excludes 1)"
        elif p.clear:
            verdict = f"a clear difference (BH-adjusted p ≤ {SIGNIFICANT_P:g} and the interval excludes 1)"
        else:
            verdict = (
                f"not a clear difference (needs BH-adjusted p ≤ {SIGNIFICANT_P:g} and an interval excluding 1)"
                + pair_detectable(p.noise, min(st.n_a, st.n_b), p.family)
            )
        out.append(f"{head}: {change} ({'; '.join(sure)}) — {verdict}.")
    return result.compile_notes + out if out else out


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
            res, clock, lack = (
                s.below.get(m.key),
                result.clock(e, m.key),
                result.lacked(e, m.key),
            )
            cells.append(
                f"{shown(s.median[m.key], m, res, False, clock, lack)}{mark} | "
                f"{shown(s.olympic[m.key], m, res, False, clock, lack)}{mark}"
            )
        rows.append(f"| {measured_label(m.key, result.runs)} | {m.unit} | " + " | ".join(cells) + " |")
    if any(r.from_host(k) for r in result.runs for k in r.origins):
        rows.extend(["", HOST_NOTE])
    return "\n".join(rows)


def runs_table(result: CompareResult) -> str:
    cols = [m.key for m in METRICS if m.in_runs_table]
    head = "| env | run | status | " + " | ".join(measured_label(c, result.runs) for c in cols) + " |"
    rows = [head, "|---|---|---|" + "---:|" * len(cols)]
    lacked = result.run_lacked
    for r in result.runs:
        vals = " | ".join(
            shown(getattr(r, c), METRIC_BY_KEY[c], r.at_resolution(c), False, r.resolutions.get(c), lacked(r, c))
            + host_mark([r], c)
            for c in cols
        )
        rows.append(f"| {md(r.env)} | {md(r.run_id)} | {md(r.status or '—')} | {vals} |")
    return "\n".join(rows)


def pairs_table(result: CompareResult) -> str:
    if not result.pairs:
        return ""
    rows = [
        "| metric | env | vs | ratio of medians | 95% CI | Mann–Whitney p | BH-adjusted p | runs | noise floor |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for p in result.pairs:
        st = p.stats
        ci = f"{fmt(st.ci_low)}–{fmt(st.ci_high)}" if st.ci_low is not None else "—"
        mark = " †" if p.at_resolution else " ‡" if p.coarse else ""
        rows.append(
            f"| {METRIC_BY_KEY[p.metric].label}{mark} | {md(p.env_a)} | {md(p.env_b)} | {fmt(st.ratio)} | {ci} | "
            f"{fmt(st.p_value, 2)} | {fmt(p.p_adjusted, 2)} | {st.n_a} vs {st.n_b} | {_floor_cell(p)} |"
        )
    if any(p.noise is not None for p in result.pairs):
        rows.append("")
        rows.append(
            "Noise floor: the larger of the two environments' (1.96 × the CV of one commit's runs); "
            "a difference within it (*within*) has no winner, whatever its p."
        )
    if any(p.at_resolution for p in result.pairs):
        rows.append("")
        rows.append("† a median at or below its clock's resolution (shown as ≤ 1 s): no ratio or test is computed.")
    if any(p.coarse and not p.at_resolution for p in result.pairs):
        rows.append("")
        rows.append(
            f"‡ values at a clock's {CLOCK_RESOLUTION_S:g} s resolution (medians under "
            f"{RESOLUTION_FACTOR} ticks): the ratio measures the clock, not the environment."
        )
    return "\n".join(rows)


def _floor_cell(p: PairResult) -> str:
    if p.noise is None:
        return "—"
    return f"±{p.noise.floor:.1%}" + (" *within*" if p.noise.within else "")


def excluded_table(excluded: list[Excluded]) -> str:
    """Markdown: one row per excluded run with its reason ("" when none)."""
    if not excluded:
        return ""
    rows = ["| env | run | why it is not compared |", "|---|---|---|"]
    rows += [f"| {md(e.env)} | {md(e.run_id)} | {md(e.reason, 400)} |" for e in excluded]
    return "\n".join(rows)


def shape_note(metrics: list[RunMetrics]) -> str:
    """A sentence when the compared runs had different GPU counts, else empty."""
    known = [m for m in metrics if m.gpus_per_node is not None]  # an unknown shape is not "0 GPUs"
    shapes = sorted({(m.env, int(m.nodes or 1), int(m.gpus_per_node)) for m in known})
    if len({(n, g) for _, n, g in shapes}) <= 1:
        return ""
    listing = ", ".join(f"{md(env)} {n}×{g}" for env, n, g in shapes)
    return (
        f"The runs compared here had different shapes ({listing} nodes × GPUs): raw figures (whole job) "
        "differ by the GPU count; compare the per-GPU rows (images/s per GPU, cost per 1,000 images, "
        "GPU-hours) for the platform difference."
    )


def identity_table(rows: list[tuple[str, str, list[str]]], envs: list[str]) -> str:
    """`bench.analysis.identity.identity_rows` as a table: one column per environment."""
    head = "| | verdict | " + " | ".join(md(e) for e in envs) + " |"
    lines = [head, "|---|---|" + "---|" * len(envs)]
    for label, verdict, cells in rows:
        lines.append(f"| {label} | {verdict} | " + " | ".join(f"`{code(c)}`" if c != "—" else c for c in cells) + " |")
    return "\n".join(lines)


def scaling_table(rows: list[tuple[str, int, float, float, float]]) -> str:
    """`bench.analysis.identity.scaling_rows` as a table; empty when there is nothing to scale."""
    if not rows:
        return ""
    lines = ["| env | GPUs | images/s (median) | images/s per GPU | scaling efficiency |", "|---|---:|---:|---:|---:|"]
    for env, n, ips, per_gpu, eff in rows:
        lines.append(f"| {md(env)} | {n} | {ips:.4g} | {per_gpu:.4g} | {eff:.0%} |")
    return "\n".join(lines)
