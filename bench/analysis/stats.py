"""Statistics across repeated runs: robust centres and a two-environment test.

Medians and olympic means (MLPerf: drop the fastest and slowest) describe one
environment; a seeded BCa bootstrap CI of the ratio of medians (scipy.stats.bootstrap)
and a Mann-Whitney U test (asv's choice) say whether two environments really differ.
Seeded, so the same input gives the same report. The p-values of one comparison's
metrics are adjusted together (Benjamini–Hochberg, scipy.stats.false_discovery_control):
with ~20 metrics judged at 0.05 each, one false "difference" per comparison would
otherwise be expected by chance.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
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
    ci_method: str = ""  # "BCa" | "percentile" | "" (no interval)

    @property
    def smallest_p(self) -> float:
        """The smallest p these runs a side could give (`smallest_p`): what the Summary names
        when there were too few runs to judge."""
        return smallest_p(self.n_a, self.n_b)


def _ratio_of_medians(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    """median(a) / median(b) along `axis` (vectorised for scipy.stats.bootstrap); NaN where b's median is 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.median(a, axis=axis) / np.median(b, axis=axis)


def ratio_interval(
    a: np.ndarray, b: np.ndarray, level: float = 0.95, seed: int = BOOTSTRAP_SEED, resamples: int = BOOTSTRAP_RESAMPLES
) -> tuple[float | None, float | None, str]:
    """(low, high, method) of the ratio of medians a/b: scipy.stats.bootstrap, BCa first.

    BCa corrects the percentile interval's bias and skew (Efron 1987); it cannot be
    computed when the jackknife has no spread (identical values: scipy warns and returns
    NaN), so then the percentile interval of the same seeded resamples is used, and where
    that is not finite either, no interval ((None, None, "")). A side with one run is a
    constant (resampling it gives itself): the other side alone is resampled; one run on
    both sides gives no interval.
    """
    from scipy.stats import bootstrap  # here: importing scipy.stats costs ~0.5 s

    if a.size < 2 and b.size < 2:
        return None, None, ""
    if a.size < 2:
        data, stat = (b,), lambda y, axis=-1: a[0] / np.median(y, axis=axis)
    elif b.size < 2:
        data, stat = (a,), lambda x, axis=-1: np.median(x, axis=axis) / b[0]
    else:
        data, stat = (a, b), _ratio_of_medians
    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a degenerate BCa warns and gives NaN: handled below
            ci = bootstrap(
                data,
                stat,
                n_resamples=resamples,
                vectorized=True,
                confidence_level=level,
                method=method,
                rng=np.random.default_rng(seed),
            ).confidence_interval
        lo, hi = float(ci.low), float(ci.high)
        if math.isfinite(lo) and math.isfinite(hi):
            return lo, hi, method
    return None, None, ""


def compare_samples(
    a: list[float | None],
    b: list[float | None],
    level: float = 0.95,
    seed: int = BOOTSTRAP_SEED,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> Comparison:
    """Ratio of medians a/b, its seeded bootstrap interval (none with `resamples` 0) and
    the two-sided Mann-Whitney p when each side has >= 3 runs."""
    xa, xb = finite(a), finite(b)
    if xa.size == 0 or xb.size == 0:
        return Comparison(None, None, None, None, int(xa.size), int(xb.size))
    mb = float(np.median(xb))
    ratio = float(np.median(xa)) / mb if mb != 0 else None
    lo = hi = None
    method = ""
    if ratio is not None and resamples > 0 and (xa.size > 1 or xb.size > 1):
        lo, hi, method = ratio_interval(xa, xb, level, seed, resamples)
    p = None
    if xa.size >= 3 and xb.size >= 3:
        if np.ptp(np.concatenate([xa, xb])) == 0:
            p = 1.0
        else:
            from scipy.stats import mannwhitneyu  # here: importing scipy.stats costs ~0.5 s, paid only when a test runs

            p = float(mannwhitneyu(xa, xb, alternative="two-sided").pvalue)
    return Comparison(ratio, lo, hi, p, int(xa.size), int(xb.size), method)


def bh_adjust(p_values: Sequence[float | None]) -> list[float | None]:
    """Benjamini–Hochberg adjusted p-values of one comparison's metrics, in their order
    (scipy.stats.false_discovery_control, method "bh"); None stays None and is not counted
    among the tests. A metric whose adjusted p is at most q is a discovery with the false
    discovery rate held at q across the family."""
    tested = [i for i, p in enumerate(p_values) if p is not None and math.isfinite(p)]
    out: list[float | None] = [None] * len(p_values)
    if not tested:
        return out
    from scipy.stats import false_discovery_control

    adjusted = false_discovery_control([float(p_values[i]) for i in tested], method="bh")  # type: ignore[arg-type]
    for i, q in zip(tested, np.atleast_1d(adjusted), strict=True):
        out[i] = float(q)
    return out
