"""How many runs a side a comparison needs: `bench pr`'s default `--runs`.

A PR is judged with a two-sided Mann–Whitney U test (bench.analysis.stats). Whether its
runs can show a change depends on how much the environment's runs scatter: the runs per
side come from the environment's own earlier runs (the run index), not from a fixed
number, and where no affordable count can show a 10 % change the command says so.

The count is the normal approximation for two samples, n = 2 (z₁₋α/₂ + z₁₋β)² (CV/δ)²
(about 16 a side for a shift of one standard deviation at α 0.05 and 80 % power: Lehr's
"sixteen s² over d²", Statistics in Medicine 11, 1992), divided by the Mann–Whitney
test's asymptotic relative efficiency against the t test on normal data, 3/π (Hodges and
Lehmann, Annals of Mathematical Statistics 27, 1956), plus z²₁₋α/₂ / 4 ≈ 1 run for small
samples (Guenther, The American Statistician 35, 1981): without it a simulation of the
exact test finds 63–78 % power, with it 75–85 % (tests/bench/analysis/test_sample_size.py).
It is never below the fewest runs whose smallest possible p reaches α (4 a side at 0.05:
stats.smallest_p; `default_runs` sizes at α / family for a family of metrics judged
together) nor above MAX_RUNS.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from bench.analysis.stats import smallest_p

ALPHA = 0.05  # two-sided, as the comparison's "clear" (compare.SIGNIFICANT_P)
POWER = 0.80  # the chance a real shift of SHIFT is found
SHIFT = 0.10  # the change a PR's runs should be able to show: 10 %
MAX_RUNS = 10  # a side: beyond this a PR's benchmark takes too long to be worth its wait
ARE_MANN_WHITNEY = 3 / math.pi  # runs a t test needs / runs Mann-Whitney needs, normal data
# The figures whose spread sizes the runs: throughput, the time inside the job and the whole
# trip. The noisiest of those measured sets the count (queue wait and cost follow from them).
SPREAD_FIGURES = ("images_per_s", "time_to_train_s", "submit_to_result_s")
MIN_SPREAD_RUNS = 3  # earlier runs (in commits with 2 or more) before a spread is believed


def fewest_runs(alpha: float = ALPHA) -> int:
    """The fewest runs a side whose smallest possible two-sided p is at most `alpha` (4 at 0.05)."""
    n = 1
    while smallest_p(n, n) > alpha:
        n += 1
    return n


def _z_sum(alpha: float, power: float) -> float:
    z = NormalDist().inv_cdf
    return z(1 - alpha / 2) + z(power)


def runs_needed(cv: float, shift: float = SHIFT, alpha: float = ALPHA, power: float = POWER) -> int:
    """Runs a side for a two-sided Mann–Whitney test to find a relative `shift` with `power`,
    when the runs scatter with coefficient of variation `cv`; at least `fewest_runs`, no cap."""
    if cv < 0 or shift <= 0:
        raise ValueError(f"cv must be >= 0 and shift > 0, got cv={cv}, shift={shift}")
    n_t = 2 * (_z_sum(alpha, power) * cv / shift) ** 2
    return max(fewest_runs(alpha), math.ceil(n_t / ARE_MANN_WHITNEY + _small(alpha) - 1e-9))


def _small(alpha: float) -> float:
    """Guenther's small-sample term, z²₁₋α/₂ / 4 runs (0.96 at α 0.05)."""
    return NormalDist().inv_cdf(1 - alpha / 2) ** 2 / 4


def detectable_shift(cv: float, n: int, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest relative shift `n` runs a side find with `power` (`runs_needed` inverted)."""
    return _z_sum(alpha, power) * cv * math.sqrt(2 / ((n - _small(alpha)) * ARE_MANN_WHITNEY))


@dataclass(frozen=True)
class Spread:
    """One figure's run-to-run scatter on one environment: within commits, pooled."""

    env: str
    figure: str
    cv: float
    runs: int


def pooled_cv(groups: Iterable[list[float]]) -> tuple[float, int] | None:
    """(the coefficient of variation within groups, pooled; runs used), or None with fewer
    than MIN_SPREAD_RUNS runs in groups of two or more. Within a commit only: a change of
    code between commits is what a PR tests, not noise."""
    sq, runs, dof = 0.0, 0, 0
    for values in groups:
        vals = [v for v in values if math.isfinite(v)]
        if len(vals) < 2:
            continue
        mean = sum(vals) / len(vals)
        if mean <= 0:
            continue
        sq += sum((v / mean - 1) ** 2 for v in vals)
        runs, dof = runs + len(vals), dof + len(vals) - 1
    if runs < MIN_SPREAD_RUNS:
        return None
    return math.sqrt(sq / dof), runs


def spreads(
    entries: Iterable[Mapping[str, Any]], experiment: str | None = None, figures: Iterable[str] = SPREAD_FIGURES
) -> list[Spread]:
    """Per environment and figure (default SPREAD_FIGURES), the pooled within-commit CV of
    its earlier runs (history entries: bench.analysis.history.run_entry), finished and
    clean only. The PR comment's noise floor (regression.within_noise) is the same figure."""
    from bench.analysis.history import usable

    groups: dict[tuple[str, str], dict[str, list[float]]] = {}
    for e in entries:
        if not usable(dict(e)) or (experiment is not None and e.get("experiment") != experiment):
            continue
        metrics = e.get("metrics") if isinstance(e.get("metrics"), dict) else {}
        for figure in figures:
            v = metrics.get(figure)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                groups.setdefault((str(e.get("env")), figure), {}).setdefault(str(e["commit"]), []).append(float(v))
    out = []
    for (env, figure), by_commit in sorted(groups.items()):
        found = pooled_cv(by_commit.values())
        if found is not None:
            out.append(Spread(env, figure, found[0], found[1]))
    return out


@dataclass(frozen=True)
class RunsChoice:
    """`bench pr`'s default runs a side and the one line that says why."""

    runs: int
    why: str
    can_detect: bool  # the count finds a SHIFT change with POWER on the measured spread


def default_runs(envs: Iterable[str], found: list[Spread], family: int = 1) -> RunsChoice:
    """The runs a side for `envs`: enough for the noisiest measured figure of any of them,
    fewest_runs without earlier runs, MAX_RUNS at most (saying what that can still find).

    `family`: how many metrics are judged together under Benjamini–Hochberg (the PR's, per
    environment). A lone changed metric among them must reach p <= α / family (BH's first
    rank), so the count is sized at that level: 4 a side never reaches 0.05 / 14."""
    envs = list(envs)
    alpha = ALPHA / max(family, 1)
    least = fewest_runs(alpha)
    mine = [s for s in found if s.env in envs]
    level = f"α {ALPHA:g}" + (f" over {family} metrics (BH: {alpha:.2g} for one changed metric)" if family > 1 else "")
    test = f"two-sided Mann–Whitney, {level}, {POWER:.0%} power"
    if not mine:
        return RunsChoice(
            least,
            f"{least} runs a side: no earlier runs of {', '.join(envs)} to measure the spread from "
            f"(the fewest whose smallest possible p reaches {alpha:.2g}); a 10 % change may go unseen",
            False,
        )
    worst = max(mine, key=lambda s: s.cv)
    need = runs_needed(worst.cv, alpha=alpha)
    spread = f"{worst.figure} varies {worst.cv:.1%} (CV) over {worst.runs} earlier runs of {worst.env}"
    if need <= MAX_RUNS:
        return RunsChoice(need, f"{need} runs a side: {spread}; that many find a {SHIFT:.0%} change ({test})", True)
    return RunsChoice(
        MAX_RUNS,
        f"{MAX_RUNS} runs a side (the most): {spread}; a {SHIFT:.0%} change needs {need} a side, "
        f"{MAX_RUNS} a side find only a {detectable_shift(worst.cv, MAX_RUNS, alpha):.0%} change or larger ({test})",
        False,
    )
