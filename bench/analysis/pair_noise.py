"""Environment against environment, judged against the noise floor: the report's (and
`bench compare`'s) Differences apply the floor the PR verdicts apply.

A difference between two environments is only worth a winner when it is larger than a
rerun of unchanged code could show. Each environment has its own floor per metric
(NOISE_Z × the CV of one commit's runs: bench.analysis.noise, stored in
results/<env>/noise.json by bench.analysis.noise_store); a pair of environments is held
to the LARGER of the two (the conservative choice: the ratio of their medians moves with
either side's scatter, and a difference within the noisier side's floor is one that
side's reruns alone could show). Where only one of the two has a floor, that one is used
(it is still a lower bound on the pair's noise); where neither has, nothing changes.

A difference whose size |ratio − 1| is below that floor reads "within noise (±x %)"
rather than a winner, whatever its p (as regression.within_noise does for a PR). Where a
difference beyond the floor is not clear, the minimum detectable effect of the runs at
hand is stated (noise.detectable: the smaller side's run count a side, at the level a
lone change among the pair's Benjamini–Hochberg family is judged at, the noisier side's
CV), or, where those runs cannot reach that level at all, how many runs a side would
find a difference of this size (sample_size.runs_needed). No second implementation: the
floor, the effect and the count are the functions the PR comment uses.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bench.analysis.noise import detectable
from bench.analysis.sample_size import ALPHA, POWER, runs_needed

if TYPE_CHECKING:
    from bench.analysis.compare import PairResult


@dataclass(frozen=True)
class PairNoise:
    """The noise floor one pair of environments is judged against, and what its runs can find."""

    floor: float  # relative: the larger of the two environments' floors for the metric
    env: str  # whose floor it is
    cv: float  # that environment's CV (floor = NOISE_Z × cv)
    within: bool  # |ratio − 1| < floor: no winner, "within noise (±floor)"
    detectable: float | None  # the runs at hand's minimum detectable effect; None: too few for any
    needed: int | None  # runs a side that find a change of this pair's size (beyond the floor, not clear)
    power: float = POWER


def pair_floor(pair: PairResult, floors: dict[str, dict[str, Any]]) -> PairNoise | None:
    """`pair`'s noise (None where neither environment has a floor for its metric, or the
    pair has no ratio: a clock's resolution, a zero). `floors`: env -> metric ->
    bench.analysis.noise.Floor (noise_store.EnvNoise.floors)."""
    ratio = pair.stats.ratio
    if pair.at_resolution or ratio is None or not ratio > 0:
        return None
    known = [(f, env) for env in (pair.env_a, pair.env_b) if (f := floors.get(env, {}).get(pair.metric)) is not None]
    if not known:
        return None
    worst, env = max(known, key=lambda x: x[0].cv)
    size = abs(ratio - 1)
    within = size < worst.floor
    family = max(pair.family, 1)
    mde = detectable(worst.cv, min(pair.stats.n_a, pair.stats.n_b), family)
    needed = None
    if not within and mde is None and size > 0:
        needed = runs_needed(worst.cv, shift=size, alpha=ALPHA / family)
    return PairNoise(worst.floor, env, worst.cv, within, mde, needed)


def apply_floors(pairs: Iterable[PairResult], noise: Iterable[Any]) -> None:
    """Set each pair's `noise` (pair_floor) from the environments' floors (`noise`:
    bench.analysis.noise_store.EnvNoise per environment, as the report's Noise floor
    section states them); a pair within noise is then not `clear` (compare.PairResult)."""
    floors = {n.env: dict(n.floors) for n in noise}
    for p in pairs:
        p.noise = pair_floor(p, floors)
