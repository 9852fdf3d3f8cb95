"""Statistics across repeated runs: robust centres and a two-environment test.

Medians and olympic means (MLPerf: drop the fastest and slowest) describe one
environment; a seeded bootstrap CI of the ratio of medians and a Mann-Whitney U test
(asv's choice) say whether two environments really differ. Seeded, so the same input
gives the same report.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BOOTSTRAP_SEED = 20200101
BOOTSTRAP_RESAMPLES = 2000


def finite(values: list[float | None] | np.ndarray) -> np.ndarray:
    arr = np.asarray([np.nan if v is None else v for v in values], dtype=float)
    return arr[np.isfinite(arr)]


def median(values: list[float | None] | np.ndarray) -> float | None:
    arr = finite(values)
    return float(np.median(arr)) if arr.size else None


def olympic_mean(values: list[float | None] | np.ndarray) -> float | None:
    """Mean without the lowest and highest value when there are at least 3."""
    arr = np.sort(finite(values))
    if arr.size == 0:
        return None
    if arr.size >= 3:
        arr = arr[1:-1]
    return float(arr.mean())


def smallest_p(n_a: int, n_b: int) -> float:
    """The smallest two-sided p an exact Mann-Whitney U test can give with n_a vs n_b runs
    (the two samples apart, no ties): 2 / C(n_a + n_b, n_a). 3 vs 3 cannot go below 0.10,
    so at alpha 0.05 no count of runs that small can name a winner, however clean."""
    from math import comb

    if n_a < 1 or n_b < 1:
        return 1.0
    return min(1.0, 2.0 / comb(n_a + n_b, n_a))


@dataclass(frozen=True)
class Comparison:
    ratio: float | None  # median(a) / median(b)
    ci_low: float | None
    ci_high: float | None
    p_value: float | None  # Mann-Whitney U, two-sided; None when a side has < 3 runs
    n_a: int
    n_b: int

    @property
    def smallest_p(self) -> float:
        """The smallest p these runs a side could give (`smallest_p`): what the Summary names
        when there were too few runs to judge."""
        return smallest_p(self.n_a, self.n_b)


def compare_samples(
    a: list[float | None],
    b: list[float | None],
    level: float = 0.95,
    seed: int = BOOTSTRAP_SEED,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> Comparison:
    xa, xb = finite(a), finite(b)
    if xa.size == 0 or xb.size == 0:
        return Comparison(None, None, None, None, int(xa.size), int(xb.size))
    mb = float(np.median(xb))
    ratio = float(np.median(xa)) / mb if mb != 0 else None
    lo = hi = None
    if ratio is not None and (xa.size > 1 or xb.size > 1):
        rng = np.random.default_rng(seed)
        ra = np.median(rng.choice(xa, size=(resamples, xa.size), replace=True), axis=1)
        rb = np.median(rng.choice(xb, size=(resamples, xb.size), replace=True), axis=1)
        ok = rb != 0
        ratios = ra[ok] / rb[ok]
        if ratios.size:
            alpha = (1 - level) / 2
            lo, hi = (float(v) for v in np.quantile(ratios, [alpha, 1 - alpha]))
    p = None
    if xa.size >= 3 and xb.size >= 3:
        if np.ptp(np.concatenate([xa, xb])) == 0:
            p = 1.0
        else:
            from scipy.stats import mannwhitneyu  # here: importing scipy.stats costs ~0.5 s, paid only when a test runs

            p = float(mannwhitneyu(xa, xb, alternative="two-sided").pvalue)
    return Comparison(ratio, lo, hi, p, int(xa.size), int(xb.size))
