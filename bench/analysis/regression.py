"""Regression verdicts: did a metric get worse between two commits on ONE environment?

Environments differ by design (that is what Atlas compares), so a change is only ever
judged against the same environment's own history. A change is a regression when it
passes a threshold (default 5 %, configurable per metric) *and* is significant. The
numbers come from `bench.analysis.stats.compare_samples` (the same routine the comparison tables
use): the ratio of medians, a seeded BCa bootstrap interval of it, and a two-sided
Mann-Whitney U p-value when each side has >= 3 runs.

- each side has >= 3 runs: one metric alone is significant when p <= alpha (default
  0.10 two-sided, i.e. 0.05 in the direction of the change; with 3 vs 3 runs the
  smallest p is 0.10, so the two samples must not overlap at all). The metrics of one
  environment judged together (the PR comment, `judge_env`) are one family: each p is
  adjusted by Benjamini–Hochberg (`adjust_family`, scipy.stats.false_discovery_control)
  and significant when the adjusted p is <= FDR_Q (0.05), so the false discovery rate
  over the family is 0.05. Without it ~14 metrics judged each at 0.10 two-sided would,
  thresholds aside, show a false regression in about half of the comparisons of
  unchanged code (1 - 0.95^14). Where the environment's noise floor is measured
  (bench.analysis.noise), a change below it is `unchanged`, "within noise", whatever its
  p (`within_noise`);
- otherwise: significant when the bootstrap interval of the change excludes zero;
- one run on each side: there is no interval; a change past the threshold is
  `inconclusive` (repeat the runs), never a pass.

A missing baseline is its own verdict (`no-baseline`), never a pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bench.analysis.metrics import METRICS
from bench.analysis.stats import BOOTSTRAP_SEED, Comparison, bh_adjust, compare_samples, median
from bench.errors import ConfigError

DEFAULT_THRESHOLD = 0.05
DEFAULT_ALPHA = 0.10
FDR_Q = 0.05  # the false discovery rate held across a family of metrics (adjust_family)
MIN_RUNS_FOR_RANK_TEST = 3

# Which way is better, from the comparison's own metric list (facts without a direction,
# such as CPU %, are not judged unless the caller gives one).
HIGHER_IS_BETTER: dict[str, bool] = {m.key: m.higher_is_better for m in METRICS if m.higher_is_better is not None}


def pr_family() -> tuple[str, ...]:
    """The metrics a PR judges per environment: one Benjamini–Hochberg family (at most; a
    figure nobody measured there, e.g. GPU energy on a CPU runner, is left out of it)."""
    from bench.analysis.metrics import HEADLINE

    return tuple(m for m in HEADLINE if m in HIGHER_IS_BETTER)


# Verdict statuses, worst first (the order a summary lists them in).
REGRESSION = "regression"
INCONCLUSIVE = "inconclusive"
NO_BASELINE = "no-baseline"
NO_DATA = "no-data"
IMPROVEMENT = "improvement"
UNCHANGED = "unchanged"
STATUS_ORDER = (REGRESSION, INCONCLUSIVE, NO_BASELINE, NO_DATA, IMPROVEMENT, UNCHANGED)


@dataclass(frozen=True)
class Verdict:
    """The judgement on one metric of one environment, with the evidence behind it."""

    env: str
    metric: str
    status: str
    baseline_n: int
    candidate_n: int
    baseline_median: float | None = None
    candidate_median: float | None = None
    change: float | None = None  # relative: candidate_median / baseline_median - 1
    threshold: float = DEFAULT_THRESHOLD
    method: str = ""  # "mann-whitney" | "bootstrap" | ""
    p_value: float | None = None  # Mann-Whitney only
    p_adjusted: float | None = None  # p_value adjusted by Benjamini–Hochberg over `family` metrics (adjust_family)
    family: int = 0
    worse: bool = False  # the change goes the bad way (a significant one is a regression)
    noise: float | None = None  # the environment's noise floor when the change is below it (within_noise)
    interval: tuple[float, float] | None = None  # bootstrap only, relative change
    significant: bool = False
    note: str = ""

    @property
    def is_regression(self) -> bool:
        return self.status == REGRESSION

    def describe(self) -> str:
        """One sentence a reader of the PR comment can act on."""
        if self.change is None:
            return self.note
        assert self.change is not None
        if self.method == "mann-whitney" and self.p_adjusted is not None:
            evidence = (
                f"BH-adjusted p={self.p_adjusted:.3g} over {self.family} metric{'s' * (self.family != 1)}, "
                f"Mann-Whitney U p={self.p_value:.3g}"
            )
        elif self.method == "mann-whitney":
            evidence = f"Mann-Whitney U p={self.p_value:.3g}"
        elif self.interval is not None:
            evidence = f"bootstrap interval [{self.interval[0]:+.1%}, {self.interval[1]:+.1%}]"
        else:
            evidence = self.method
        if self.noise is not None:
            evidence += f"; within noise (±{self.noise:.1%})"
        text = (
            f"{self.metric} on {self.env}: {self.change:+.1%} "
            f"(threshold {self.threshold:.0%}, {evidence}, "
            f"{self.baseline_n} vs {self.candidate_n} runs): {self.status}"
        )
        return f"{text}; {self.note}" if self.note else text


def judge(
    env: str,
    metric: str,
    baseline: Sequence[float],
    candidate: Sequence[float],
    *,
    higher_is_better: bool | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    alpha: float = DEFAULT_ALPHA,
    seed: int = BOOTSTRAP_SEED,
) -> Verdict:
    """Verdict on one metric of one environment: baseline runs vs candidate runs."""
    if higher_is_better is None:
        if metric not in HIGHER_IS_BETTER:
            raise ConfigError(
                f"metric {metric!r} has no known direction: pass higher_is_better "
                f"(known metrics: {', '.join(sorted(HIGHER_IS_BETTER))})"
            )
        higher_is_better = HIGHER_IS_BETTER[metric]
    if not threshold >= 0:
        raise ConfigError(f"threshold for {metric!r} must be a fraction >= 0 (e.g. 0.05 for 5 %), got {threshold!r}")
    cmp = compare_samples(list(candidate), list(baseline), seed=seed)
    common = dict(
        env=env,
        metric=metric,
        baseline_n=cmp.n_b,
        candidate_n=cmp.n_a,
        threshold=threshold,
        baseline_median=median(list(baseline)),
        candidate_median=median(list(candidate)),
    )
    if cmp.n_b == 0:
        return Verdict(
            status=NO_BASELINE,
            **common,
            note=f"{metric} on {env}: no baseline run to compare with, so no verdict "
            f"(this is not a pass: run the base commit on {env} first)",
        )
    if cmp.n_a == 0:
        return Verdict(
            status=NO_DATA, **common, note=f"{metric} on {env}: the new commit has no finished run with this metric"
        )
    if cmp.ratio is None:  # the baseline median is 0
        same = median(list(candidate)) == 0
        return Verdict(
            status=UNCHANGED if same else INCONCLUSIVE,
            change=0.0 if same else None,
            **common,
            note="" if same else f"{metric} on {env}: the baseline median is 0, so a relative change is undefined",
        )
    return _verdict_of_change(cmp, higher_is_better, threshold, alpha, common)


def _verdict_of_change(
    cmp: Comparison, higher_is_better: bool, threshold: float, alpha: float, common: dict[str, Any]
) -> Verdict:
    """Both sides measured: how big the change is, and whether the runs' noise explains it."""
    change = cmp.ratio - 1.0
    worse = change < 0 if higher_is_better else change > 0
    interval = None if cmp.ci_low is None else (cmp.ci_low - 1.0, cmp.ci_high - 1.0)
    note = ""
    if cmp.p_value is not None:
        method, significant = "mann-whitney", cmp.p_value <= alpha
    elif interval is not None:
        method, significant = "bootstrap", interval[0] > 0 or interval[1] < 0
    else:
        method, significant = "single run", False
        note = "one run per side: no noise estimate, so no significance; repeat the runs to judge"
    return Verdict(
        status=_status(change, threshold, significant, worse, method),
        change=change,
        method=method,
        p_value=cmp.p_value,
        interval=interval,
        significant=significant,
        worse=worse,
        note=note,
        **common,
    )


def _status(change: float, threshold: float, significant: bool, worse: bool, method: str) -> str:
    if abs(change) <= threshold:
        return UNCHANGED
    if significant:
        return REGRESSION if worse else IMPROVEMENT
    return INCONCLUSIVE if method == "single run" else UNCHANGED


def adjust_family(verdicts: Sequence[Verdict], q: float = FDR_Q) -> list[Verdict]:
    """The verdicts of one environment's metrics judged together, their two-sided
    Mann-Whitney p-values adjusted by Benjamini–Hochberg (stats.bh_adjust) and significance
    re-decided on the adjusted p at `q`: the false discovery rate over the family is `q`.
    Verdicts without a rank test (bootstrap, single run, no data) keep theirs."""
    tested = [i for i, v in enumerate(verdicts) if v.method == "mann-whitney" and v.p_value is not None]
    adjusted = bh_adjust([verdicts[i].p_value for i in tested])
    out = list(verdicts)
    for i, adj in zip(tested, adjusted, strict=True):
        v = out[i]
        significant = adj is not None and adj <= q
        status = _status(v.change, v.threshold, significant, v.worse, v.method) if v.change is not None else v.status
        out[i] = replace(v, p_adjusted=adj, family=len(tested), significant=significant, status=status)
    return out


def judge_env(
    env: str,
    baseline_rows: Sequence[Mapping[str, object]],
    candidate_rows: Sequence[Mapping[str, object]],
    metrics: Sequence[str],
    *,
    thresholds: Mapping[str, float] | None = None,
    higher_is_better: Mapping[str, bool] | None = None,
    alpha: float = DEFAULT_ALPHA,
    seed: int = BOOTSTRAP_SEED,
) -> list[Verdict]:
    """Verdicts for several metrics, judged as one family (adjust_family); every row must
    belong to `env` (no cross-env verdicts).

    Rows are per-run mappings such as the comparison table's records: `{"env": ..., metric: value}`.
    """
    for row in (*baseline_rows, *candidate_rows):
        row_env = row.get("env")
        if row_env is not None and row_env != env:
            raise ConfigError(
                f"regression verdicts compare one environment's history only: "
                f"got a run of {row_env!r} while judging {env!r}"
            )
    thresholds = thresholds or {}
    directions = {**HIGHER_IS_BETTER, **(higher_is_better or {})}
    out = []
    for metric in metrics:
        out.append(
            judge(
                env,
                metric,
                [r.get(metric) for r in baseline_rows],  # type: ignore[misc]
                [r.get(metric) for r in candidate_rows],  # type: ignore[misc]
                higher_is_better=directions.get(metric),
                threshold=thresholds.get(metric, DEFAULT_THRESHOLD),
                alpha=alpha,
                seed=seed,
            )
        )
    return adjust_family(out)


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


def within_noise(verdicts: Sequence[Verdict], floors: Mapping[str, float]) -> list[Verdict]:
    """Verdicts whose change is smaller than the environment's noise floor for the metric
    (`floors`: metric -> relative floor, NOISE_Z x the coefficient of variation of runs of
    one commit: bench.analysis.noise) are `unchanged`, "within noise (±x %)", significant
    or not: a regression needs the adjusted p AND a change beyond the floor, since a change
    one rerun of unchanged code could show is not worth an alarm (over 50 unchanged
    comparisons of 20 metrics the adjusted p alone lets 7 through, with the floor none:
    tests/bench/analysis/test_noise_false_alarms.py).
    One run a side past the threshold is then no longer `inconclusive` either: the
    history already measured how far runs of one commit scatter."""
    out = []
    for v in verdicts:
        floor = floors.get(v.metric)
        if floor is None or v.change is None or abs(v.change) >= floor:
            out.append(v)
            continue
        note = "" if v.method == "single run" else v.note
        out.append(replace(v, status=UNCHANGED, noise=floor, note=note))
    return out
