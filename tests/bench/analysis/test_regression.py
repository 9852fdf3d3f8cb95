"""Regression verdicts on synthetic numbers: pure functions, no files."""

from __future__ import annotations

import pytest

from bench.analysis.regression import (
    IMPROVEMENT,
    INCONCLUSIVE,
    NO_BASELINE,
    NO_DATA,
    REGRESSION,
    UNCHANGED,
    judge,
    judge_env,
    parse_thresholds,
    worst_first,
)
from bench.errors import ConfigError


def test_clear_slowdown_with_three_runs_each_is_a_regression_by_mann_whitney():
    v = judge("local", "images_per_s", [100, 101, 99], [90, 91, 89])
    assert v.status == REGRESSION
    assert v.method == "mann-whitney"
    assert v.p_value == pytest.approx(0.10)  # smallest two-sided p for 3 vs 3: no overlap
    assert v.change == pytest.approx(-0.10)  # ratio of medians: 90 / 100
    assert "regression" in v.describe() and "-10.0%" in v.describe()


def test_lower_is_better_metric_flags_an_increase():
    v = judge("local", "time_to_train_s", [60, 61, 59, 60], [70, 71, 69, 70])
    assert v.status == REGRESSION
    v = judge("local", "time_to_train_s", [70, 71, 69, 70], [60, 61, 59, 60])
    assert v.status == IMPROVEMENT


def test_big_change_that_overlaps_is_not_significant():
    # Means differ by ~10 %, but the samples interleave: no verdict of regression.
    v = judge("local", "images_per_s", [80, 120, 100], [70, 115, 85])
    assert v.method == "mann-whitney"
    assert not v.significant
    assert v.status == UNCHANGED


def test_significant_change_below_threshold_is_unchanged():
    v = judge("local", "images_per_s", [100.0, 100.1, 100.2], [97.0, 97.1, 97.2])
    assert v.significant
    assert v.status == UNCHANGED
    # the same change with a 2 % threshold is a regression: thresholds are per metric
    v2 = judge("local", "images_per_s", [100.0, 100.1, 100.2], [97.0, 97.1, 97.2], threshold=0.02)
    assert v2.status == REGRESSION


def test_per_metric_thresholds_in_judge_env():
    # 4 a side: judged together, the metrics' p-values are adjusted (Benjamini–Hochberg at 0.05),
    # which 3 a side (smallest p 0.10) can never pass
    rows = [(100, 60), (101, 61), (99, 59), (100.5, 60.5)]
    base = [{"env": "local", "images_per_s": x, "time_to_train_s": t} for x, t in rows]
    cand = [{"env": "local", "images_per_s": x - 7, "time_to_train_s": t + 4} for x, t in rows]
    verdicts = {
        v.metric: v
        for v in judge_env("local", base, cand, ["images_per_s", "time_to_train_s"], thresholds={"images_per_s": 0.10})
    }
    assert verdicts["images_per_s"].status == UNCHANGED  # -7 % < 10 %
    assert verdicts["time_to_train_s"].status == REGRESSION  # +6.7 % > default 5 %
    assert verdicts["time_to_train_s"].p_adjusted == pytest.approx(2 / 70)  # both p 0.029: BH keeps it


def test_few_runs_use_a_seeded_bootstrap_interval():
    v = judge("local", "images_per_s", [100, 102], [80, 81])
    assert v.method == "bootstrap"
    assert v.interval is not None and v.interval[1] < 0
    assert v.status == REGRESSION
    again = judge("local", "images_per_s", [100, 102], [80, 81])
    assert again.interval == v.interval  # seeded: the same numbers give the same interval


def test_bootstrap_interval_containing_zero_is_not_significant():
    v = judge("local", "images_per_s", [60, 140], [50, 130])
    assert v.method == "bootstrap"
    lo, hi = v.interval
    assert lo < 0 < hi
    assert v.status == UNCHANGED


def test_bootstrap_interval_brackets_the_observed_change():
    v = judge("local", "images_per_s", [10, 11], [12, 13, 11, 12, 12])
    lo, hi = v.interval
    assert 0 < lo <= v.change <= hi
    assert v.status == IMPROVEMENT


def test_one_run_each_is_inconclusive_not_a_pass():
    v = judge("local", "images_per_s", [100], [80])
    assert v.status == INCONCLUSIVE
    assert v.change == pytest.approx(-0.2)
    assert "one run per side" in v.describe()
    assert judge("local", "images_per_s", [100], [99]).status == UNCHANGED  # within the threshold


def test_missing_baseline_is_said_plainly_and_is_not_a_pass():
    v = judge("satori", "images_per_s", [], [80, 81, 82])
    assert v.status == NO_BASELINE
    assert not v.is_regression
    assert "no baseline" in v.describe() and "not a pass" in v.describe()
    assert v.status != UNCHANGED


def test_missing_candidate_data():
    assert judge("local", "images_per_s", [1, 2, 3], [None, float("nan")]).status == NO_DATA


def test_cross_environment_rows_are_refused():
    with pytest.raises(ConfigError, match="one environment"):
        judge_env(
            "local", [{"env": "satori", "images_per_s": 1}], [{"env": "local", "images_per_s": 1}], ["images_per_s"]
        )


def test_unknown_metric_needs_a_direction():
    with pytest.raises(ConfigError, match="no known direction"):
        judge("local", "frobs", [1, 2, 3], [1, 2, 3])
    assert judge("local", "frobs", [1, 1, 1], [2, 2, 2], higher_is_better=True).status == IMPROVEMENT


def test_parse_thresholds():
    assert parse_thresholds(["images_per_s=10%", "cost_usd=0.2"]) == {"images_per_s": 0.10, "cost_usd": 0.2}
    for bad in ["images_per_s", "x=abc", "x=-1"]:
        with pytest.raises(ConfigError):
            parse_thresholds([bad])


def test_worst_first_lists_regressions_then_missing_baselines():
    vs = [
        judge("a", "images_per_s", [1, 1, 1], [1, 1, 1]),
        judge("b", "images_per_s", [], [1]),
        judge("c", "images_per_s", [100, 101, 99], [50, 51, 49]),
    ]
    vs.append(judge("d", "images_per_s", [100], [50]))
    assert [v.status for v in worst_first(vs)] == [REGRESSION, INCONCLUSIVE, NO_BASELINE, UNCHANGED]


def test_zero_baseline_median():
    assert judge("local", "queue_wait_s", [0, 0, 0], [0, 0, 0]).status == UNCHANGED
    v = judge("local", "queue_wait_s", [0, 0, 0], [5, 6, 7])
    assert v.status == INCONCLUSIVE and "undefined" in v.describe()


def test_within_noise_needs_a_change_beyond_the_floor_significant_or_not():
    from bench.analysis.regression import within_noise

    one = judge("local", "images_per_s", [100], [93])  # one run a side, past the threshold
    sig = judge("local", "images_per_s", [100, 101, 99, 100.5], [93, 94, 92, 93.5])  # 4 a side, p 0.029
    big = judge("local", "images_per_s", [100], [70])
    assert (one.status, sig.status, big.status) == (INCONCLUSIVE, REGRESSION, INCONCLUSIVE)
    soft, held, large = within_noise([one, sig, big], {"images_per_s": 0.09})
    assert soft.status == UNCHANGED and soft.noise == 0.09 and "within noise (±9.0%)" in soft.describe()
    assert "one run per side" not in soft.describe()
    assert held.status == UNCHANGED and held.noise == 0.09 and held.significant  # p alone is not a regression
    (kept,) = within_noise([sig], {"images_per_s": 0.05})  # -7 % is beyond a 5 % floor: the verdict stands
    assert kept.status == REGRESSION and kept.noise is None
    assert large.status == INCONCLUSIVE and large.noise is None  # -30 % is beyond the floor
    assert within_noise([one], {}) == [one]  # no floor measured: nothing changes
