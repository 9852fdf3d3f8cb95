"""An environment's noise floor per metric, and what it means for a verdict.

How far runs of ONE commit scatter on one environment is measured, not assumed: the
coefficient of variation (CV) of its runs of the same commit, pooled over every commit
with two or more clean, finished runs of the experiment (sample_size.pooled_cv, the same
spread `bench pr --runs` is sized from). Stored by `bench noise` in
`results/<env>/noise.json` (bench.analysis.noise_store).

The floor is NOISE_Z × CV: under normal noise 95 % of one commit's runs land within
±1.96 CV of their mean, so a change smaller than that is one a single rerun of unchanged
code could show. A regression (or improvement) verdict needs the Benjamini–Hochberg
adjusted p AND a change beyond the floor (regression.within_noise): statistical
significance alone, over ~14 metrics with few runs, lets a one-CV wobble through now
and then (tests/bench/analysis/test_noise_false_alarms.py counts them). The gate costs
little the runs could promise: the minimum detectable effect of a PR's runs (`detectable`,
at BH's level for one changed metric among 14, 80 % power) is 2.76 CV with 6 runs a
side and 1.94 CV with 10 (`bench pr`'s most): the floor is below what the runs can find.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bench.analysis.sample_size import ALPHA, POWER, detectable_shift, fewest_runs, pooled_cv

NOISE_Z = 1.96  # the floor in CVs: 95 % of one commit's runs fall within ±NOISE_Z CV (normal noise)
BAND_Z = 3.0  # proposed expected.yaml bands: ±3 CV around the median (a run outside is 1 in ~370 by chance)


@dataclass(frozen=True)
class Floor:
    """One metric's noise on one environment: CV of one commit's runs and the floor it sets."""

    metric: str
    cv: float
    runs: int  # runs pooled (in commits with two or more)
    median: float  # the median over those runs (the reference a proposed band is centred on)

    @property
    def floor(self) -> float:
        return NOISE_Z * self.cv

    @property
    def z(self) -> float:
        """The floor in CVs (NOISE_Z), for the sentence that states it."""
        return NOISE_Z


@dataclass(frozen=True)
class Measured:
    """What one experiment's floors of one environment were made from."""

    env: str
    experiment: str
    commits: dict[str, int]  # commit -> runs of it used (two or more each)
    floors: dict[str, Floor]  # metric -> floor


def measure(entries: Iterable[Mapping[str, Any]], env: str, experiment: str, metrics: Iterable[str]) -> Measured:
    """The floors of `env`'s runs of `experiment` (history entries: history.run_entry),
    clean and finished only, each commit with two or more runs counted; a metric with
    fewer than sample_size.MIN_SPREAD_RUNS such runs gets no floor."""
    from bench.analysis.history import usable

    by_commit: dict[str, list[Mapping[str, Any]]] = {}
    for e in entries:
        if e.get("env") == env and e.get("experiment") == experiment and usable(dict(e)):
            by_commit.setdefault(str(e["commit"]), []).append(e)
    repeated = {sha: rows for sha, rows in sorted(by_commit.items()) if len(rows) >= 2}
    floors: dict[str, Floor] = {}
    for metric in metrics:
        groups = [[_value(r, metric) for r in rows] for rows in repeated.values()]
        groups = [[v for v in g if v is not None] for g in groups]
        found = pooled_cv(groups)
        if found is not None:
            values = sorted(v for g in groups if len(g) >= 2 for v in g)
            floors[metric] = Floor(metric, found[0], found[1], _median(values))
    return Measured(env, experiment, {sha: len(rows) for sha, rows in repeated.items()}, floors)


def _value(entry: Mapping[str, Any], metric: str) -> float | None:
    metrics = entry.get("metrics")
    v = metrics.get(metric) if isinstance(metrics, dict) else None
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _median(values: list[float]) -> float:
    n = len(values)
    return values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2


def detectable(cv: float, runs: int, family: int = 1) -> float | None:
    """The minimum detectable effect (relative) of `runs` a side on a metric scattering by
    `cv`: the shift a two-sided Mann–Whitney test finds with POWER at ALPHA / family (a lone
    changed metric among `family` under Benjamini–Hochberg), never below the noise floor
    (a smaller change reads "within noise" whatever its p). None where `runs` a side cannot
    reach that level at all (`fewest_runs`: 6 at 0.05 / 14), so nothing is detectable."""
    alpha = ALPHA / max(family, 1)
    if runs < max(2, fewest_runs(alpha)):
        return None
    return max(detectable_shift(cv, runs, alpha, POWER), NOISE_Z * cv)


def propose_bands(measured: Measured, metrics: Iterable[str]) -> dict[str, dict[str, float]]:
    """expected.yaml bands for one experiment (bench.analysis.expected's format): value the
    median of the runs the floor came from, lower/upper ∓BAND_Z CV as fractions of it
    (a throughput may not fall, a time may not rise, past the band)."""
    out: dict[str, dict[str, float]] = {}
    for metric in metrics:
        f = measured.floors.get(metric)
        if f is None or f.median == 0:
            continue
        width = float(f"{BAND_Z * f.cv:.3g}")
        out[metric] = {"value": float(f"{f.median:.4g}"), "lower": -width, "upper": width}
    return out
