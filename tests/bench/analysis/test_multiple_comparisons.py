"""Issue 37 item 4: the metrics of one comparison are one family (Benjamini–Hochberg), and
the ratio's interval is scipy's BCa bootstrap, not hand-written resampling.

Seeded draws, so every count below is a fixed outcome of the code: a change that drops
the adjustment, or the interval's method, fails here."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench.analysis.compare import PairResult, adjust_comparisons, is_clear
from bench.analysis.regression import REGRESSION, judge, judge_env
from bench.analysis.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, bh_adjust, compare_samples

METRICS = 20  # ~ the metrics a comparison judges
RUNS = 6  # a side: 6 vs 6 can reach p = 0.0022, below BH's first step 0.05 / 20
SEEDS = 50


def _family(rng: np.random.Generator, shift: dict[int, float] | None = None, cv: float = 0.03) -> list[PairResult]:
    """One comparison: METRICS metrics of env a against env b, RUNS a side, noise `cv`;
    metric i of a is shifted by `shift[i]` (relative)."""
    shift = shift or {}
    pairs = []
    for i in range(METRICS):
        b = rng.normal(100.0, 100.0 * cv, RUNS)
        a = rng.normal(100.0 * (1 + shift.get(i, 0.0)), 100.0 * cv, RUNS)
        pairs.append(PairResult("a", "b", f"m{i}", compare_samples(list(a), list(b))))
    adjust_comparisons(pairs)
    return pairs


@pytest.mark.slow
def test_unchanged_metrics_give_at_most_one_clear_verdict_after_bh_where_raw_p_gives_many() -> None:
    raw_total, bh_total, bh_most = 0, 0, 0
    for seed in range(SEEDS):
        pairs = _family(np.random.default_rng(seed))
        raw = sum(is_clear(p.stats, p.stats.p_value) for p in pairs)  # each metric alone at 0.05
        bh = sum(p.clear for p in pairs)
        raw_total, bh_total, bh_most = raw_total + raw, bh_total + bh, max(bh_most, bh)
    assert bh_most <= 1  # never more than one false "clear" in a comparison
    assert bh_total <= 0.1 * SEEDS  # FDR 0.05 under no change: about 1 comparison in 20 has one
    assert raw_total >= 3 * max(bh_total, 5)  # without the adjustment: many more


def test_a_real_shift_stays_clear_after_bh() -> None:
    for seed in range(10):
        pairs = _family(np.random.default_rng(1000 + seed), shift={7: 0.30}, cv=0.02)
        moved = pairs[7]
        assert moved.clear, (seed, moved.stats, moved.p_adjusted)
        assert moved.p_adjusted == pytest.approx(min(1.0, moved.stats.p_value * METRICS))  # the smallest p of 20
        assert moved.family == METRICS and moved.stats.ci_low > 1.2
        assert sum(p.clear for p in pairs) <= 2


def test_bh_adjustment_is_scipys_and_skips_untested_metrics() -> None:
    from scipy.stats import false_discovery_control

    ps = [0.001, None, 0.04, 0.03, 0.2]
    expected = false_discovery_control([0.001, 0.04, 0.03, 0.2], method="bh")
    got = bh_adjust(ps)
    assert got[1] is None
    assert [got[i] for i in (0, 2, 3, 4)] == pytest.approx(list(expected))
    assert bh_adjust([None, None]) == [None, None]


def test_the_interval_is_scipys_bca_bootstrap_on_the_same_data() -> None:
    from scipy.stats import bootstrap

    rng = np.random.default_rng(3)
    a, b = rng.normal(130, 4, 6), rng.normal(100, 4, 7)
    got = compare_samples(list(a), list(b))
    ref = bootstrap(
        (a, b),
        lambda x, y, axis=-1: np.median(x, axis=axis) / np.median(y, axis=axis),
        n_resamples=BOOTSTRAP_RESAMPLES,
        vectorized=True,
        method="BCa",
        rng=np.random.default_rng(BOOTSTRAP_SEED),
    ).confidence_interval
    assert got.ci_method == "BCa"
    assert (got.ci_low, got.ci_high) == pytest.approx((ref.low, ref.high))
    assert compare_samples(list(a), list(b)) == got  # seeded: the same report every time


def test_identical_values_fall_back_to_the_percentile_interval_and_one_run_a_side_to_none() -> None:
    same = compare_samples([5.0, 5.0, 5.0], [4.0, 4.0, 4.0])  # BCa's jackknife has no spread: scipy gives NaN
    assert same.ci_method == "percentile" and (same.ci_low, same.ci_high) == pytest.approx((1.25, 1.25))
    one = compare_samples([1.0], [2.0, 3.0])  # the single run is a constant; the other side is resampled
    assert one.ci_method == "BCa" and one.ci_low <= 0.4 <= one.ci_high
    none = compare_samples([1.0], [2.0])
    assert none.ci_low is None and none.ci_high is None and none.ci_method == ""
    assert all(math.isfinite(v) for v in (same.ci_low, same.ci_high, one.ci_low, one.ci_high))


@pytest.mark.slow
def test_pr_verdicts_of_one_environment_are_one_family() -> None:
    """judge_env (the PR comment's path, as compare_pr) adjusts across its metrics: unchanged
    code over 50 seeded comparisons gives far fewer regressions than each metric alone."""
    keys = [f"m{i}" for i in range(METRICS)]
    up = dict.fromkeys(keys, True)
    alone = together = 0
    for seed in range(SEEDS):
        rng = np.random.default_rng(seed)
        base = [dict(zip(keys, map(float, rng.normal(100, 3, METRICS)), strict=True)) for _ in range(RUNS)]
        head = [dict(zip(keys, map(float, rng.normal(100, 3, METRICS)), strict=True)) for _ in range(RUNS)]
        verdicts = judge_env("e", base, head, keys, higher_is_better=up, thresholds=dict.fromkeys(keys, 0.0))
        together += sum(v.status == REGRESSION for v in verdicts)
        alone += sum(
            judge("e", k, [r[k] for r in base], [r[k] for r in head], higher_is_better=True, threshold=0.0).status
            == REGRESSION
            for k in keys
        )
        assert all(v.family == METRICS and v.p_adjusted >= v.p_value for v in verdicts)
    assert together * 5 <= alone, (together, alone)
    shifted = judge_env(
        "e",
        [{"m0": 100.0 + i} for i in range(RUNS)],
        [{"m0": 70.0 + i} for i in range(RUNS)],
        ["m0"],
        higher_is_better={"m0": True},
    )
    assert shifted[0].status == REGRESSION and "BH-adjusted p=0.00216 over 1 metric," in shifted[0].describe()
