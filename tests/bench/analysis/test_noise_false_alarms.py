"""Issue 37 item 3, done-when: 50 comparisons of unchanged runs, with seeded noise at each
environment's measured floor, give at most 1 regression verdict across all their metrics,
and a real 30 % shift is still found.

Each environment's floor is measured as `bench noise` measures it (bench.analysis.noise.measure
on a seeded history of 4 commits x 4 runs); the comparisons then draw both sides at that
measured CV. A regression needs the Benjamini–Hochberg adjusted p (judge_env) AND a change
beyond the floor (within_noise). Seeded draws: every count is a fixed outcome of the code."""

from __future__ import annotations

import numpy as np
import pytest

from bench.analysis.noise import NOISE_Z, Measured, detectable, measure
from bench.analysis.regression import REGRESSION, judge_env, pr_family, within_noise

COMPARISONS = 50
RUNS = 6  # a side: bench pr's default without earlier runs
ENVS = {"local": 0.03, "moc": 0.08}  # the CV each synthetic history is drawn with


def _history(env: str, cv: float, keys: list[str], seed: int = 7) -> list[dict]:
    """History entries (history.run_entry's shape): 4 commits x 4 runs, every metric ~100 +- cv."""
    rng = np.random.default_rng(seed)
    return [
        {
            "env": env,
            "experiment": "smoke",
            "commit": f"{c + 1:x}" * 40,
            "dirty": False,
            "status": "success",
            "metrics": {k: float(100 * (1 + rng.normal(0, cv))) for k in keys},
        }
        for c in range(4)
        for _ in range(4)
    ]


def _side(rng: np.random.Generator, m: Measured, keys: list[str], shift: dict[str, float] | None = None) -> list[dict]:
    shift = shift or {}
    return [
        {k: float(100 * (1 + shift.get(k, 0.0)) * (1 + rng.normal(0, m.floors[k].cv))) for k in keys}
        for _ in range(RUNS)
    ]


def _count(env: str, keys: list[str], m: Measured, seed0: int = 0) -> tuple[int, int]:
    """(regressions with BH alone, with BH and the floor) over COMPARISONS unchanged comparisons;
    thresholds 0, so the floor, not the 5 % threshold, is what stands between noise and an alarm."""
    up = dict.fromkeys(keys, True)
    floors = {k: f.floor for k, f in m.floors.items()}
    alone = gated = 0
    for seed in range(seed0, seed0 + COMPARISONS):
        rng = np.random.default_rng(seed)
        base, head = _side(rng, m, keys), _side(rng, m, keys)
        verdicts = judge_env(env, base, head, keys, higher_is_better=up, thresholds=dict.fromkeys(keys, 0.0))
        alone += sum(v.status == REGRESSION for v in verdicts)
        gated += sum(v.status == REGRESSION for v in within_noise(verdicts, floors))
    return alone, gated


@pytest.mark.parametrize("env", sorted(ENVS))
def test_fifty_unchanged_pr_comparisons_give_at_most_one_regression(env: str) -> None:
    keys = list(pr_family())  # the 14 metrics a PR judges per environment
    m = measure(_history(env, ENVS[env], keys), env, "smoke", keys)
    assert set(m.floors) == set(keys) and m.commits == {f"{c + 1:x}" * 40: 4 for c in range(4)}
    assert all(0.5 * ENVS[env] < f.cv < 1.5 * ENVS[env] for f in m.floors.values())  # measured, near the truth
    alone, gated = _count(env, keys, m)
    assert gated <= 1, (env, alone, gated)
    assert gated <= alone
    print(f"{env}: {alone} regressions with BH alone, {gated} with BH and the floor, in {COMPARISONS}")


@pytest.mark.slow
def test_the_floor_removes_the_false_alarms_bh_lets_through_in_a_wider_family() -> None:
    """20 metrics (as a report's comparison): BH alone lets 7 regressions through in 50
    unchanged comparisons at a 3 % CV; with the floor, at most 1."""
    keys = [f"m{i}" for i in range(20)]
    m = measure(_history("local", 0.03, keys), "local", "smoke", keys)
    alone, gated = _count("local", keys, m)
    print(f"20 metrics: {alone} regressions with BH alone, {gated} with BH and the floor, in {COMPARISONS}")
    assert alone >= 3, alone  # the case the floor is for: significant wobbles of one or two CV
    assert gated <= 1, (alone, gated)


@pytest.mark.parametrize("env", sorted(ENVS))
def test_a_real_30_percent_shift_is_still_a_regression(env: str) -> None:
    keys = list(pr_family())
    m = measure(_history(env, ENVS[env], keys), env, "smoke", keys)
    floors = {k: f.floor for k, f in m.floors.items()}
    up = dict.fromkeys(keys, True)
    for seed in range(10):
        rng = np.random.default_rng(500 + seed)
        base, head = _side(rng, m, keys), _side(rng, m, keys, shift={"images_per_s": -0.30})
        verdicts = within_noise(judge_env(env, base, head, keys, higher_is_better=up), floors)
        moved = next(v for v in verdicts if v.metric == "images_per_s")
        assert moved.status == REGRESSION and moved.noise is None, (env, seed, moved.describe())
        assert sum(v.status == REGRESSION for v in verdicts) <= 2


def test_the_minimum_detectable_effect_is_never_below_the_floor_and_shrinks_with_runs() -> None:
    assert detectable(0.03, 1) is None
    six, ten = detectable(0.03, 6, family=14), detectable(0.03, 10, family=14)
    assert six > ten >= NOISE_Z * 0.03  # more runs find less, never below the floor
    assert six == pytest.approx(2.76 * 0.03, abs=0.001)  # 6 a side at 0.05 / 14, 80 % power
    assert detectable(0.03, 12, family=14) == pytest.approx(NOISE_Z * 0.03)  # 1.73 CV: the floor holds it
