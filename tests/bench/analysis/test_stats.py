"""bench/analysis/stats.py: medians, olympic means and the comparison of two samples."""

from __future__ import annotations

import math

import pytest

from bench.analysis.stats import compare_samples, median, olympic_mean, smallest_p


def test_median_and_olympic_mean_skip_missing_values():
    assert median([3.0, None, 1.0, float("nan"), 2.0]) == 2.0
    assert median([None]) is None
    assert olympic_mean([1.0, 2.0, 3.0, 100.0]) == 2.5  # fastest and slowest dropped
    assert olympic_mean([1.0, 3.0]) == 2.0  # fewer than 3: plain mean


def test_a_clear_difference_has_a_ci_excluding_one_and_the_smallest_exact_p():
    c = compare_samples([20.0, 21.0, 22.0], [10.0, 10.5, 11.0])
    assert math.isclose(c.ratio, 21.0 / 10.5)
    assert c.ci_low > 1 and c.p_value == 0.1 and (c.n_a, c.n_b) == (3, 3)
    assert compare_samples([20.0, 21.0, 22.0], [10.0, 10.5, 11.0]) == c  # seeded: same answer


def test_too_few_runs_or_a_zero_baseline_give_no_test():
    assert compare_samples([1.0], [2.0]).p_value is None
    assert compare_samples([1.0, 2.0], [0.0, 0.0]).ratio is None
    assert compare_samples([], [1.0]).n_a == 0


@pytest.mark.parametrize(("n_a", "n_b"), [(3, 3), (3, 4), (4, 4), (3, 5), (5, 5), (2, 6)])
def test_smallest_p_is_what_the_exact_test_gives_two_samples_apart(n_a: int, n_b: int) -> None:
    from scipy.stats import mannwhitneyu

    apart = mannwhitneyu(list(range(n_a)), list(range(100, 100 + n_b)), alternative="two-sided", method="exact")
    assert smallest_p(n_a, n_b) == pytest.approx(apart.pvalue)
    assert smallest_p(3, 3) == pytest.approx(0.10) and smallest_p(1, 1) == 1.0 and smallest_p(0, 5) == 1.0
