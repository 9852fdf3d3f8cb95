"""The Summary's first lines: per environment against the baseline, the whole trip (push,
else submit, to the placed result) with its ratio's interval, the phases that make most of
the difference, and the energy per result where both sides measured it.

What a reader came for is the end-to-end difference, not an in-job figure: "local-slurm
spends 61.0 s more in deliver and collect (of 69.4 s more in all), 3.27× the end-to-end
time (95 % CI 3.10–3.45)". Numbers come from bench.analysis.report_data's `Headline`; only words are here.
"""

from __future__ import annotations

from bench.analysis.metrics import METRIC_BY_KEY, fmt
from bench.analysis.report_data import CompareResult, Comparison, Headline, PairResult, PhaseGap
from bench.render.escape import md

ENERGY_KEY = "energy_per_image_j"  # energy per result: GPU energy (NVML counter) per image trained
MIN_GAP_S = 0.001  # a phase gap under a millisecond is no difference worth naming


def _pair(result: CompareResult, env: str, key: str) -> PairResult | None:
    return next((p for p in result.pairs if p.env_a == env and p.env_b == result.baseline and p.metric == key), None)


def interval(st: Comparison | None) -> str:
    """A ratio's interval as "95 % CI L–H"; empty when the runs gave none (one run a side)."""
    if st is None or st.ci_low is None or st.ci_high is None:
        return ""
    return f"95 % CI {fmt(st.ci_low)}–{fmt(st.ci_high)}"


def most_different(gaps: list[PhaseGap]) -> list[PhaseGap]:
    """The phase that differs most, with the next one when it goes the same way (delivery
    and collection both slower): together they are the difference a reader should see."""
    gaps = [g for g in gaps if abs(g.seconds) >= MIN_GAP_S]
    if not gaps:
        return []
    first = gaps[0]
    same = [g for g in gaps[1:2] if (g.seconds > 0) == (first.seconds > 0)]
    return [first, *same]


def _phases_words(env: str, gaps: list[PhaseGap], total: float, ratio: str) -> str:
    named = most_different(gaps)
    if not named:
        return ""
    seconds = sum(g.seconds for g in named)
    more = "more" if seconds > 0 else "less"
    words = f"{md(env)} spends {fmt(abs(seconds))} s {more} in {' and '.join(g.phase for g in named)}"
    if abs(total) >= MIN_GAP_S and abs(total - seconds) >= MIN_GAP_S:
        words += f" (of {fmt(abs(total))} s {'more' if total > 0 else 'less'} in all)"
    return f"{words}, {ratio}"


def _energy_words(result: CompareResult, env: str) -> str:
    a, b = (result.summaries[e].median.get(ENERGY_KEY) for e in (env, result.baseline))
    pair = _pair(result, env, ENERGY_KEY)
    if a is None or b is None or pair is None or pair.stats.ratio is None:
        return ""
    unit = METRIC_BY_KEY[ENERGY_KEY].unit
    return (
        f" Energy per result: {md(env)} {fmt(a)} {unit}, {md(result.baseline or '')} {fmt(b)} {unit} "
        f"({fmt(pair.stats.ratio)}×{', ' + ci if (ci := interval(pair.stats)) else ''}; GPU energy per image, medians)."
    )


def end_to_end_lines(headline: Headline) -> list[str]:
    """One line per environment against the baseline: the whole trip's medians, its ratio
    with the 95 % bootstrap interval and the runs a side, the phases that differ most, and
    the energy per result where both sides measured it."""
    out = []
    result = headline.result
    base = result.baseline
    for env in result.envs:
        if env == base or base is None:
            continue
        a, b = result.summaries[env].median, result.summaries[base].median
        key = "push_to_result_s" if a.get("push_to_result_s") and b.get("push_to_result_s") else "submit_to_result_s"
        if not a.get(key) or not b.get(key):
            continue
        pair = _pair(result, env, key)
        st = pair.stats if pair is not None else None
        words = "push" if key == "push_to_result_s" else "submit"
        runs = f"; medians of {st.n_a} vs {st.n_b} runs" if st is not None else "; medians"
        ci = interval(st)
        ratio = f"{fmt(a[key] / b[key])}× the end-to-end time" + (f" ({ci})" if ci else "")
        phases = _phases_words(env, headline.gaps.get(env, []), a[key] - b[key], ratio)
        out.append(
            f"End to end ({words} → result{runs}): {md(env)} {fmt(a[key])} s, {md(base)} {fmt(b[key])} s"
            + (f": {phases}." if phases else f": {ratio}.")
            + _energy_words(result, env)
        )
    return out
