"""Regression verdicts: did a metric get worse between two commits on ONE environment?

Environments differ by design (that is what Atlas compares), so a change is only ever
judged against the same environment's own history. A change is a regression when it
passes a threshold (default 5 %, configurable per metric) *and* is significant:

- each side has >= 3 runs: one-sided Mann-Whitney U in the direction of the change,
  p <= alpha (default 0.05; with 3 vs 3 runs the smallest possible p is 0.05, so the
  two samples must not overlap at all);
- otherwise: a seeded bootstrap interval (default 95 %) of the relative change of the
  means that excludes zero. With one run per side the interval is a single point: the
  verdict then says so, because it measures no run-to-run noise.

A missing baseline is its own verdict (`no-baseline`), never a pass.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np
from scipy.stats import mannwhitneyu

from bench.errors import ConfigError

DEFAULT_THRESHOLD = 0.05
DEFAULT_ALPHA = 0.05
DEFAULT_CONFIDENCE = 0.95
DEFAULT_RESAMPLES = 2000
MIN_RUNS_FOR_RANK_TEST = 3

# Which way is better for the metrics the comparison tables carry. A metric not listed
# here needs an explicit direction (`higher_is_better`) from the caller.
HIGHER_IS_BETTER: dict[str, bool] = {
    "images_per_s": True,
    "gpu_util_pct": True,
    "time_to_train_s": False,
    "wall_s": False,
    "queue_wait_s": False,
    "cpu_pct": False,
    "rss_mb": False,
    "host_mem_mb": False,
    "gpu_mem_used_mb": False,
    "energy_j": False,
    "energy_kwh": False,
    "cost_usd": False,
}

# Verdict statuses, worst first (the order a summary lists them in).
REGRESSION = "regression"
NO_BASELINE = "no-baseline"
NO_DATA = "no-data"
IMPROVEMENT = "improvement"
UNCHANGED = "unchanged"
STATUS_ORDER = (REGRESSION, NO_BASELINE, NO_DATA, IMPROVEMENT, UNCHANGED)


@dataclass(frozen=True)
class Verdict:
    """The judgement on one metric of one environment, with the evidence behind it."""

    env: str
    metric: str
    status: str
    baseline_n: int
    candidate_n: int
    baseline_mean: float | None = None
    candidate_mean: float | None = None
    change: float | None = None          # relative: candidate_mean / baseline_mean - 1
    threshold: float = DEFAULT_THRESHOLD
    method: str = ""                     # "mann-whitney" | "bootstrap" | ""
    p_value: float | None = None         # Mann-Whitney only
    interval: tuple[float, float] | None = None  # bootstrap only, relative change
    significant: bool = False
    note: str = ""

    @property
    def is_regression(self) -> bool:
        return self.status == REGRESSION

    def describe(self) -> str:
        """One sentence a reader of the PR comment can act on."""
        if self.status in (NO_BASELINE, NO_DATA):
            return self.note
        assert self.change is not None
        if self.method == "mann-whitney":
            evidence = f"Mann-Whitney U p={self.p_value:.3g}"
        elif self.interval is not None:
            evidence = f"bootstrap interval [{self.interval[0]:+.1%}, {self.interval[1]:+.1%}]"
        else:
            evidence = self.method
        text = (f"{self.metric} on {self.env}: {self.change:+.1%} "
                f"(threshold {self.threshold:.0%}, {evidence}, "
                f"{self.baseline_n} vs {self.candidate_n} runs): {self.status}")
        return f"{text}; {self.note}" if self.note else text


def _clean(values: Iterable[float]) -> list[float]:
    out = []
    for v in values:
        if v is None:
            continue
        f = float(v)
        if math.isfinite(f):
            out.append(f)
    return out


def bootstrap_interval(baseline: Sequence[float], candidate: Sequence[float], *,
                       confidence: float = DEFAULT_CONFIDENCE, resamples: int = DEFAULT_RESAMPLES,
                       seed: int = 0) -> tuple[float, float]:
    """Percentile interval of mean(candidate)/mean(baseline) - 1; seeded, so repeatable."""
    rng = np.random.default_rng(seed)
    base = np.asarray(baseline, dtype=float)
    cand = np.asarray(candidate, dtype=float)
    b = rng.choice(base, size=(resamples, base.size), replace=True).mean(axis=1)
    c = rng.choice(cand, size=(resamples, cand.size), replace=True).mean(axis=1)
    rel = c / b - 1.0
    tail = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(rel, [tail, 1.0 - tail])
    return float(lo), float(hi)


def judge(env: str, metric: str, baseline: Sequence[float], candidate: Sequence[float], *,
          higher_is_better: bool | None = None, threshold: float = DEFAULT_THRESHOLD,
          alpha: float = DEFAULT_ALPHA, seed: int = 0) -> Verdict:
    """Verdict on one metric of one environment: baseline runs vs candidate runs."""
    if higher_is_better is None:
        if metric not in HIGHER_IS_BETTER:
            raise ConfigError(f"metric {metric!r} has no known direction: pass higher_is_better "
                              f"(known metrics: {', '.join(sorted(HIGHER_IS_BETTER))})")
        higher_is_better = HIGHER_IS_BETTER[metric]
    if not threshold >= 0:
        raise ConfigError(f"threshold for {metric!r} must be a fraction >= 0 (e.g. 0.05 for 5 %), got {threshold!r}")
    base, cand = _clean(baseline), _clean(candidate)
    common = dict(env=env, metric=metric, baseline_n=len(base), candidate_n=len(cand), threshold=threshold)
    if not base:
        return Verdict(status=NO_BASELINE, **common,
                       note=f"{metric} on {env}: no baseline run to compare with, so no verdict "
                            f"(this is not a pass: run the base commit on {env} first)")
    if not cand:
        return Verdict(status=NO_DATA, **common,
                       note=f"{metric} on {env}: the new commit has no finished run with this metric")
    b_mean, c_mean = float(np.mean(base)), float(np.mean(cand))
    if b_mean == 0:
        return Verdict(status=NO_BASELINE, baseline_mean=b_mean, candidate_mean=c_mean, **common,
                       note=f"{metric} on {env}: baseline mean is 0, a relative change is undefined")
    change = c_mean / b_mean - 1.0
    worse = change < 0 if higher_is_better else change > 0
    note = ""
    if len(base) >= MIN_RUNS_FOR_RANK_TEST and len(cand) >= MIN_RUNS_FOR_RANK_TEST:
        method, interval = "mann-whitney", None
        if change == 0:
            p = 1.0
        else:
            alternative = "greater" if change > 0 else "less"
            p = float(mannwhitneyu(cand, base, alternative=alternative, method="auto").pvalue)
        significant = p <= alpha
    else:
        method, p = "bootstrap", None
        interval = bootstrap_interval(base, cand, seed=seed)
        significant = interval[0] > 0 or interval[1] < 0
        if len(base) == 1 and len(cand) == 1:
            note = "one run per side: the interval is a point and measures no noise; repeat runs to be sure"
    passes = abs(change) > threshold
    if passes and significant:
        status = REGRESSION if worse else IMPROVEMENT
    else:
        status = UNCHANGED
    return Verdict(status=status, baseline_mean=b_mean, candidate_mean=c_mean, change=change,
                   method=method, p_value=p, interval=interval, significant=significant, note=note,
                   **common)


def judge_env(env: str, baseline_rows: Sequence[Mapping[str, object]],
              candidate_rows: Sequence[Mapping[str, object]], metrics: Sequence[str], *,
              thresholds: Mapping[str, float] | None = None,
              higher_is_better: Mapping[str, bool] | None = None,
              alpha: float = DEFAULT_ALPHA, seed: int = 0) -> list[Verdict]:
    """Verdicts for several metrics; every row must belong to `env` (no cross-env verdicts).

    Rows are per-run mappings such as the comparison table's records: `{"env": ..., metric: value}`.
    """
    for row in (*baseline_rows, *candidate_rows):
        row_env = row.get("env")
        if row_env is not None and row_env != env:
            raise ConfigError(f"regression verdicts compare one environment's history only: "
                              f"got a run of {row_env!r} while judging {env!r}")
    thresholds = thresholds or {}
    directions = {**HIGHER_IS_BETTER, **(higher_is_better or {})}
    out = []
    for metric in metrics:
        out.append(judge(env, metric,
                         [r.get(metric) for r in baseline_rows],  # type: ignore[misc]
                         [r.get(metric) for r in candidate_rows],  # type: ignore[misc]
                         higher_is_better=directions.get(metric),
                         threshold=thresholds.get(metric, DEFAULT_THRESHOLD), alpha=alpha, seed=seed))
    return out


def parse_thresholds(items: Sequence[str]) -> dict[str, float]:
    """`METRIC=FRACTION` or `METRIC=N%` items from the command line."""
    out: dict[str, float] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ConfigError(f"threshold {item!r}: expected METRIC=VALUE, e.g. images_per_s=0.05 or images_per_s=5%")
        try:
            out[name] = float(value[:-1]) / 100 if value.endswith("%") else float(value)
        except ValueError:
            raise ConfigError(f"threshold {item!r}: {value!r} is not a number") from None
        if out[name] < 0:
            raise ConfigError(f"threshold {item!r}: must be >= 0")
    return out


def worst_first(verdicts: Iterable[Verdict]) -> list[Verdict]:
    return sorted(verdicts, key=lambda v: (STATUS_ORDER.index(v.status), v.env, v.metric))
