"""Compare environments: per-run figures, per-environment summaries, and the test of
whether one environment really differs from another. Numbers only: `bench.render.tables`
turns them into Markdown and sentences.

Only comparable runs enter the statistics (bench.analysis.comparable): successful runs of
one experiment and one `config_sha256` from a clean tree; every other run is listed in
`excluded` with its reason.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pandas as pd

from bench.analysis import time_sums as ts
from bench.analysis.comparable import Excluded, select_comparable
from bench.analysis.metrics import HEADLINE, METRIC_BY_KEY, METRICS, RunMetrics, run_metrics
from bench.analysis.parallel import map_runs
from bench.analysis.stats import Comparison, bh_adjust, compare_samples, median, olympic_mean, smallest_p
from bench.errors import AtlasError
from bench.records.read import RunData
from bench.records.timeline import ALL_PHASES

if TYPE_CHECKING:
    from bench.analysis.pair_noise import PairNoise

# A difference is called clear when the 95 % BCa bootstrap CI of the ratio excludes 1 and
# the two-sided Mann-Whitney p, adjusted by Benjamini–Hochberg across the metrics of the
# same comparison (one environment against the baseline), is at most 0.05: the false
# discovery rate over those metrics is held at 0.05. Where the runs are too few for any p
# to reach that (3 vs 3: the smallest p there is 0.10), the verdict says "not enough runs
# to judge" and how small p could have been, never a winner (stats.smallest_p). Where the
# environments' noise floors are known (the report, `bench compare`), a difference smaller
# than the larger of the two floors is "within noise", never a winner either
# (bench.analysis.pair_noise).
SIGNIFICANT_P = 0.05  # also the false discovery rate q of the Benjamini–Hochberg step
CLOCK_RESOLUTION_S = 1.0  # Slurm accounting and Kubernetes timestamps count whole seconds
RESOLUTION_FACTOR = 10  # below 10 ticks a median is too coarse for a ratio to mean much


def at_clock_resolution(values: list[float | None]) -> bool:
    """True when every value is a whole number of seconds and their median is under
    RESOLUTION_FACTOR seconds: such values come from a 1 s clock, not from a measurement
    fine enough to compare (a 1 s queue wait against 0.07 s is not "14x longer")."""
    vals = [float(v) for v in values if v is not None]
    if not any(vals):  # none, or all exactly 0: nothing a clock tick could distort
        return False
    whole = all(abs(v / CLOCK_RESOLUTION_S - round(v / CLOCK_RESOLUTION_S)) < 1e-9 for v in vals)
    return whole and (median(vals) or 0.0) < RESOLUTION_FACTOR * CLOCK_RESOLUTION_S


@dataclass
class EnvSummary:
    env: str
    runs: int
    statuses: dict[str, int]
    median: dict[str, float | None] = field(default_factory=dict)
    olympic: dict[str, float | None] = field(default_factory=dict)
    # metric key -> its clock's resolution, where the median is at or below it ("≤ 1 s"):
    # no ratio or test is computed against such a value.
    below: dict[str, float] = field(default_factory=dict)


@dataclass
class PairResult:
    env_a: str
    env_b: str
    metric: str
    stats: Comparison
    # Environments whose values of this metric sit at a clock's resolution (whole seconds,
    # e.g. Slurm's accounting) with a median below RESOLUTION_FACTOR ticks: the ratio then
    # measures the clock, not the environment, and no winner is called.
    coarse: tuple[str, ...] = ()
    at_resolution: bool = False  # `coarse` environments' medians are at or below the clock's resolution
    # The Mann-Whitney p adjusted by Benjamini–Hochberg over this comparison's tested
    # metrics (compare_runs: `adjust_comparisons`); None where no test ran or the pair is coarse.
    p_adjusted: float | None = None
    family: int = 0  # how many tested metrics the adjustment was over
    # The noise floor the pair is held to (the larger of the two environments'; None: no
    # floor measured, or not applied): bench.analysis.pair_noise.apply_floors.
    noise: PairNoise | None = None

    @property
    def judgeable(self) -> bool:
        """Could these runs show a difference at all: a test ran and its smallest possible p is under the cut."""
        st = self.stats
        return st.p_value is not None and smallest_p(st.n_a, st.n_b) <= SIGNIFICANT_P

    @property
    def within_noise(self) -> bool:
        """The difference is smaller than the pair's noise floor: no winner, whatever its p."""
        return self.noise is not None and self.noise.within

    @property
    def clear(self) -> bool:
        return not self.coarse and not self.within_noise and self.judgeable and is_clear(self.stats, self.p_adjusted)


@dataclass
class CompareResult:
    runs: list[RunMetrics]
    envs: list[str]
    summaries: dict[str, EnvSummary]
    pairs: list[PairResult]
    config_hashes: dict[str, list[str]]
    baseline: str | None
    excluded: list[Excluded] = field(default_factory=list)
    experiment: str | None = None

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame([r.as_dict() for r in self.runs])

    def ordered_pairs(self) -> list[PairResult]:
        """The pairs in the Summary's order (`ordered_pairs`)."""
        return ordered_pairs(self)

    @property
    def compile_notes(self) -> list[str]:
        """The sentence on compiled and eager runs compared together (bench.analysis.instrument)."""
        from bench.analysis.instrument import mixed_compile_note

        return mixed_compile_note(self.runs)

    def clock(self, env: str, key: str) -> float | None:
        """The coarsest clock resolution among `env`'s compared runs for `key` (None: not a timed span)."""
        return ts.env_clock(self.runs, env, key)

    def lacked(self, env: str, key: str) -> str | None:
        """The label when every compared run of `env` lacks `key`'s phase for the same reason."""
        return ts.env_lacked(self.runs, env, key)

    @staticmethod
    def run_lacked(run: RunMetrics, key: str) -> str | None:
        """The label ("no scheduler") when one run's `key` is empty because its kind has no such phase."""
        return ts.lacked(run, key)


def config_hashes(runs: list[RunData]) -> dict[str, list[str]]:
    """env -> the distinct config hashes of its compared runs."""
    by_env: dict[str, set[str]] = {}
    for r in runs:
        by_env.setdefault(r.env, set())
        if r.config_sha256:
            by_env[r.env].add(r.config_sha256)
    return {env: sorted(hs) for env, hs in sorted(by_env.items())}


def compare_runs(
    runs: list[RunData],
    allow_different: bool = False,
    baseline: str | None = None,
    allow_dirty: bool = False,
) -> CompareResult:
    """Statistics over the comparable runs only (`comparable.select_comparable`); the rest
    are listed in `excluded` with their reasons. Cost comes from each record's frozen
    environment facts, never from clusters/."""
    selection = select_comparable(runs, allow_dirty=allow_dirty, allow_different=allow_different)
    runs = selection.runs
    hashes = config_hashes(runs)
    envs = sorted({r.env for r in runs})
    metrics = sorted(map_runs(run_metrics, runs), key=lambda m: (m.env, m.run_id))
    summaries: dict[str, EnvSummary] = {}
    for env in envs:
        mine = [m for m in metrics if m.env == env]
        statuses = Counter(m.status or "unknown" for m in mine)
        s = EnvSummary(env, len(mine), dict(sorted(statuses.items())))
        for metric in METRICS:
            values = [getattr(m, metric.key) for m in mine]
            s.median[metric.key] = median(values)
            s.olympic[metric.key] = olympic_mean(values)
            resolution = max((m.resolutions[metric.key] for m in mine if metric.key in m.resolutions), default=None)
            if resolution is not None and s.median[metric.key] is not None and s.median[metric.key] <= resolution:
                s.below[metric.key] = resolution
        summaries[env] = s
    if baseline is not None and baseline not in envs:
        raise AtlasError(
            f"--baseline {baseline!r} has no comparable runs (environments with some: {', '.join(envs) or 'none'})"
        )
    base = baseline or (envs[0] if envs else None)
    pairs: list[PairResult] = []
    for env in envs:
        if env == base:
            continue
        for key in HEADLINE:
            a = [getattr(m, key) for m in metrics if m.env == env]
            b = [getattr(m, key) for m in metrics if m.env == base]
            timed = METRIC_BY_KEY[key].unit == "s"
            below = tuple(e for e in (env, base) if key in summaries[e].below)
            if below:  # at or below the clock's resolution: no ratio, no test
                stats = Comparison(None, None, None, None, sum(v is not None for v in a), sum(v is not None for v in b))
                pairs.append(PairResult(env, base, key, stats, below, at_resolution=True))
                continue
            coarse = tuple(e for e, vals in ((env, a), (base, b)) if timed and at_clock_resolution(vals))
            pairs.append(PairResult(env, base, key, compare_samples(a, b), coarse))
    adjust_comparisons(pairs)
    return CompareResult(metrics, envs, summaries, pairs, hashes, base, selection.excluded, selection.experiment)


def adjust_comparisons(pairs: list[PairResult]) -> None:
    """Set each pair's Benjamini–Hochberg adjusted p, one family per compared environment
    (its metrics against the baseline). Coarse pairs are never judged, so they are not
    in the family; every other tested metric is, judgeable or not."""
    for env in dict.fromkeys(p.env_a for p in pairs):
        family = [p for p in pairs if p.env_a == env and not p.coarse and p.stats.p_value is not None]
        for p, q in zip(family, bh_adjust([p.stats.p_value for p in family]), strict=True):
            p.p_adjusted, p.family = q, len(family)


def is_clear(st: Comparison, p_adjusted: float | None) -> bool:
    """A difference is clear when the 95 % CI of the ratio excludes 1 and the
    Benjamini–Hochberg adjusted p (`p_adjusted`) is at most SIGNIFICANT_P."""
    return (
        p_adjusted is not None
        and p_adjusted <= SIGNIFICANT_P
        and st.ci_low is not None
        and st.ci_high is not None
        and (st.ci_low > 1 or st.ci_high < 1)
    )


def ordered_pairs(result: CompareResult) -> list[PairResult]:
    """The Summary's order: clear differences first, then those the runs could judge, each
    by size (|log ratio|, so 0.5× and 2× weigh the same); a fixed list would bury the
    largest difference (submit to result 3.3×) under small in-job ones."""

    def size(p: PairResult) -> float:
        r = p.stats.ratio
        return abs(math.log(r)) if r is not None and r > 0 and math.isfinite(r) else -1.0

    return sorted(result.pairs, key=lambda p: (not p.clear, not p.judgeable, -size(p)))


@dataclass(frozen=True)
class PhaseGap:
    """How much longer (median seconds; negative: shorter) env_a spends in one phase than env_b."""

    phase: str
    seconds: float


def phase_gaps(result: CompareResult, env_a: str, env_b: str) -> list[PhaseGap]:
    """The timeline phases both environments know, largest difference of medians first."""
    a, b = result.summaries[env_a].median, result.summaries[env_b].median
    gaps = [
        PhaseGap(phase, a[key] - b[key])
        for phase in ALL_PHASES
        if a.get(key := f"phase_{phase}_s") is not None and b.get(key) is not None
    ]
    return sorted(gaps, key=lambda g: -abs(g.seconds))
