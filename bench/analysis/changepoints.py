"""Change points in one environment's history of one metric, found and explained.

Detection: `ruptures` (https://github.com/deepcharles/ruptures), PELT search over a
linear-kernel cost (`KernelCPD`, compiled in C) on the per-commit medians, scaled by a
robust noise estimate (the MAD of successive differences) and penalised BIC-like, as
git-perf and the E-divisive tools of MongoDB and Apache Otava do with their own
searches. Confirmation: every candidate must pass the project's own two-sample test
(`bench.analysis.stats.compare_samples`: Mann–Whitney U over the runs on each side, up
to the neighbouring change points) and move the median by at least `min_change`; a
candidate that fails is dropped and its neighbours are tested again over the merged
sides. Explanation: the provenance of the last commit before and the first commit at the
change point, field by field ("driver 535 → 550; same code").
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import numpy as np

from bench.analysis.history import PROVENANCE, CommitPoint, dominant
from bench.analysis.stats import compare_samples

ALPHA = 0.05
MIN_CHANGE = 0.05
MIN_SIZE = 2  # commits on each side of a change point, at least
PENALTY = 3.0  # x log(n), in units of the noise variance


@dataclass(frozen=True)
class ChangePoint:
    env: str
    experiment: str
    metric: str
    index: int  # position of the first commit after the change
    commit: str
    before: float  # median of the runs on each side
    after: float
    p_value: float
    n_before: int
    n_after: int
    changed: str  # what the provenance says changed, for people
    start: int = 0  # the sides: points[start:index] before, points[index:end] after
    end: int = 0

    @property
    def change(self) -> float:
        return self.after / self.before - 1 if self.before else math.inf

    @property
    def change_text(self) -> str:
        """ "+12.5%", or "from 0" where the median before was 0 (no ratio exists)."""
        return f"{self.change:+.1%}" if math.isfinite(self.change) else "from 0"


def _noise(signal: np.ndarray) -> float:
    """Robust standard deviation of the noise: MAD of successive differences / sqrt(2)."""
    diffs = np.diff(signal)
    mad = float(np.median(np.abs(diffs - np.median(diffs)))) * 1.4826 / math.sqrt(2) if diffs.size else 0.0
    if mad > 0:
        return mad
    spread = float(np.std(signal))
    return spread if spread > 0 else max(abs(float(np.median(signal))) * 1e-6, 1e-12)


def candidates(signal: np.ndarray, min_size: int = MIN_SIZE, penalty: float = PENALTY) -> list[int]:
    """Indices where a new segment starts, by PELT over a linear kernel (ruptures)."""
    n = signal.size
    if n < 2 * min_size:
        return []
    import ruptures as rpt  # after the size test: a report of a short history does without it

    z = ((signal - np.median(signal)) / _noise(signal)).reshape(-1, 1)
    ends = rpt.KernelCPD(kernel="linear", min_size=min_size).fit(z).predict(pen=penalty * math.log(n))
    return [int(b) for b in ends[:-1]]


def describe(before: dict[str, str | None], after: dict[str, str | None]) -> str:
    """'driver 535 → 550, torch 2.4 → 2.5; same code' from two commits' provenance."""
    changes = [
        f"{label} {before.get(key) or '?'} → {after.get(key) or '?'}"
        for key, label in PROVENANCE
        if key != "code" and before.get(key) != after.get(key)
    ]
    code_before, code_after = before.get("code"), after.get("code")
    if code_before == code_after:
        changes.append("same code")
    else:
        changes.append(f"code {str(code_before)[:7]} → {str(code_after)[:7]}")
        if len(changes) == 1:
            changes[0] += " (nothing else recorded changed)"
    return ", ".join(changes[:-1]) + ("; " if len(changes) > 1 else "") + changes[-1]


def _provenance(point: CommitPoint) -> dict[str, str | None]:
    return {key: dominant(point.provenance, key) for key, _ in PROVENANCE}


def _moved(ratio: float | None, before: list[float], after: list[float], min_change: float) -> bool:
    """The median moved by `min_change` at least; from a median of 0 any move counts (no ratio exists)."""
    if ratio is not None and math.isfinite(ratio):
        return abs(ratio - 1) >= min_change
    return float(np.median(before)) == 0.0 and float(np.median(after)) != 0.0


def _runs(points: list[CommitPoint], lo: int, hi: int) -> list[float]:
    return [v for p in points[lo:hi] for v in p.values]


def change_points(
    key: tuple[str, str, str],
    points: list[CommitPoint],
    *,
    alpha: float = ALPHA,
    min_change: float = MIN_CHANGE,
    min_size: int = MIN_SIZE,
) -> list[ChangePoint]:
    """Confirmed change points of one (env, experiment, metric) history, oldest first."""
    env, experiment, metric = key
    signal = np.array([statistics.median(p.values) for p in points], dtype=float)
    kept = candidates(signal, min_size)
    while True:  # drop the weakest unconfirmed candidate, re-test the rest over merged sides
        bounds = [0, *kept, len(points)]
        tests = []
        for i, b in enumerate(kept):
            before, after = _runs(points, bounds[i], b), _runs(points, b, bounds[i + 2])
            cmp = compare_samples(after, before, resamples=0)  # the p-value and ratio; no interval needed
            ok = cmp.p_value is not None and cmp.p_value <= alpha and _moved(cmp.ratio, before, after, min_change)
            tests.append((ok, cmp, before, after))
        failed = [i for i, t in enumerate(tests) if not t[0]]
        if not failed:
            break
        worst = max(failed, key=lambda i: tests[i][1].p_value if tests[i][1].p_value is not None else 2.0)
        kept.pop(worst)
    found = []
    bounds = [0, *kept, len(points)]
    for i, (b, (_, cmp, before, after)) in enumerate(zip(kept, tests)):
        found.append(
            ChangePoint(
                env=env,
                experiment=experiment,
                metric=metric,
                index=b,
                commit=points[b].commit,
                before=float(np.median(before)),
                after=float(np.median(after)),
                p_value=float(cmp.p_value),
                n_before=len(before),
                n_after=len(after),
                changed=describe(_provenance(points[b - 1]), _provenance(points[b])),
                start=bounds[i],
                end=bounds[i + 2],
            )
        )
    return found
