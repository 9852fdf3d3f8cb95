"""Words match numbers: every summary sentence says what its row of the differences
table says (the same ratio, the same interval, the same direction, "wins" only under
the one stated rule). Property-based: hypothesis draws the runs' values."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from bench.analysis.compare import (
    SIGNIFICANT_P,
    CompareResult,
    EnvSummary,
    PairResult,
    adjust_comparisons,
    at_clock_resolution,
)
from bench.analysis.metrics import HEADLINE, METRIC_BY_KEY, fmt
from bench.analysis.stats import compare_samples, median, smallest_p
from bench.render.tables import pairs_table, verdicts

values = st.lists(st.floats(min_value=0.05, max_value=5000, allow_nan=False), min_size=1, max_size=6)
whole_seconds = st.lists(st.integers(min_value=0, max_value=9).map(float), min_size=1, max_size=6)


def _result(key: str, a: list[float], b: list[float]) -> CompareResult:
    timed = METRIC_BY_KEY[key].unit == "s"
    coarse = tuple(e for e, v in (("x", a), ("y", b)) if timed and at_clock_resolution(v))
    pair = PairResult("x", "y", key, compare_samples(a, b), coarse)
    adjust_comparisons([pair])  # a family of one: the adjusted p is the raw p
    summaries = {e: EnvSummary(e, len(v), {}, {key: median(v)}, {}) for e, v in (("x", a), ("y", b))}
    return CompareResult([], ["x", "y"], summaries, [pair], {}, "y")


@settings(max_examples=300, deadline=None)
@given(key=st.sampled_from(HEADLINE), a=values | whole_seconds, b=values | whole_seconds)
def test_every_sentence_agrees_with_its_table_row(key: str, a: list[float], b: list[float]) -> None:
    result = _result(key, a, b)
    [pair] = result.pairs
    stats, metric = pair.stats, METRIC_BY_KEY[key]
    [sentence] = verdicts(result)
    row = pairs_table(result).splitlines()[2]
    cells = [c.strip() for c in row.strip("|").split("|")]
    ratio_cell, ci_cell, p_cell = cells[3], cells[4], cells[5]
    if stats.ratio is None or stats.ratio <= 0:
        assert "no ratio" in sentence and "wins" not in sentence
        return
    # the same ratio and interval, the same way round (env ÷ baseline)
    assert f"ratio {ratio_cell}" in sentence
    if ci_cell != "—":
        assert f"95 % CI {ci_cell}" in sentence
    if p_cell != "—":
        assert f"Mann–Whitney p = {p_cell}" in sentence
    if cells[6] != "—":
        assert f"BH-adjusted p = {cells[6]} over 1 metric)" in sentence
    # the change is said in the ratio's direction, as a percentage of the baseline
    if abs(stats.ratio - 1) > 1e-9:
        up = {"s": "longer", "img/s": "faster", "img/s/GPU": "faster"}.get(metric.unit, "higher")
        down = {"s": "shorter", "img/s": "slower", "img/s/GPU": "slower"}.get(metric.unit, "lower")
        said = re.search(r" vs y: ([0-9.,]+) % (\w+) \(ratio ", sentence)
        assert said, sentence
        pct, word = said.group(1), said.group(2)
        assert word == (up if stats.ratio > 1 else down), sentence
        assert pct == fmt(abs(stats.ratio - 1) * 100, 2), sentence
    # one rule for "wins": significance at the stated level AND an interval excluding 1
    clear = (
        pair.p_adjusted is not None
        and pair.p_adjusted <= SIGNIFICANT_P
        and stats.ci_low is not None
        and (stats.ci_low > 1 or stats.ci_high < 1)
        and not pair.coarse
        and smallest_p(stats.n_a, stats.n_b) <= SIGNIFICANT_P  # the runs could reach it at all
    )
    assert ("wins" in sentence) == (clear and metric.higher_is_better is not None), sentence
    if "wins" in sentence:
        winner = "x" if (stats.ratio > 1) == metric.higher_is_better else "y"
        assert f"— {winner} wins (BH-adjusted p ≤ {SIGNIFICANT_P:g}" in sentence
    # values at a clock's resolution are marked in both places
    assert (" ‡ " in row or row.split("|")[1].strip().endswith("‡")) == bool(pair.coarse)
    assert ("clock" in sentence) == bool(pair.coarse)


def test_the_issue_s_examples_read_right() -> None:
    """0.923 with CI 0.876–1.11 is '7.7 % lower', never '1.08× lower'; p = 0.10 with an
    interval containing 1 is no win; 1 s against 0.07 s of queue wait is not 14x."""
    result = _result("gpu_util_mean_pct", [60.0, 61.0, 59.5], [65.0, 64.0, 66.0])
    [s] = verdicts(result)
    assert "% lower" in s and "× lower" not in s and "ratio 0.9" in s
    result = _result("queue_wait_s", [1.0, 1.0, 2.0], [0.07, 0.05, 0.08])
    [s] = verdicts(result)
    assert "not comparable: x's values sit at the clock's 1 s resolution" in s and "wins" not in s
    assert "‡" in pairs_table(result)
