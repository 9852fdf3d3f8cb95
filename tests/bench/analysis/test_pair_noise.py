"""Environment against environment, held to the noise floor (bench.analysis.pair_noise):
a difference within the larger of the two environments' stored floors reads "within
noise" rather than a winner, in `bench compare` (the report's Differences are the same
rows and sentences: bench.analysis.report_data applies the same floors); where the runs
are too few, the minimum detectable effect is stated. Synthetic records."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bench.analysis.compare import PairResult, adjust_comparisons, compare_runs
from bench.analysis.noise import Floor, detectable
from bench.analysis.pair_noise import pair_floor
from bench.analysis.sample_size import runs_needed
from bench.analysis.stats import compare_samples
from bench.cli import main
from bench.records.read import find_runs
from bench.records.select import select_runs
from bench.render.noise_words import pair_detectable
from bench.render.tables import verdicts
from tests.synthetic_records import RunSpec, write_run

NOW = "c" * 40  # the compared commit
EARLIER = ["1" * 40, "2" * 40]


def _ips(lines: list[str]) -> str:
    return next(x for x in lines if x.startswith("images/s, whole job"))


def test_a_difference_within_the_larger_floor_has_no_winner(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results"
    rng = np.random.default_rng(5)
    k = 0
    for sha in EARLIER:  # env a scatters ~12 % between reruns of one commit: its floor is wide
        for _ in range(3):
            ips = float(100 * (1 + rng.normal(0, 0.12)))
            write_run(results, RunSpec("a", f"a{k}", sha=sha, start=1_789_000_000 + k * 100, images_per_s=ips, seed=k))
            k += 1
    for env, ips in (("a", 100.0), ("b", 105.0)):  # b 5 % faster at NOW, 6 quiet runs a side
        for i in range(6):
            write_run(
                results, RunSpec(env, f"{env}n{i}", sha=NOW, start=1_790_000_000 + i * 100, images_per_s=ips, seed=i)
            )
    for env in ("a", "b"):
        assert main(["noise", "--env", env, "--results", str(results)]) == 0
    capsys.readouterr()
    floor_a = json.loads((results / "a" / "noise.json").read_text())["experiments"]["smoke"]["metrics"]
    floor_b = json.loads((results / "b" / "noise.json").read_text())["experiments"]["smoke"]["metrics"]
    wide, narrow = floor_a["images_per_s"]["floor"], floor_b["images_per_s"]["floor"]
    assert narrow < 0.05 < wide  # b's own floor alone would let the 5 % through; a's does not

    # without floors the 5 % is a clear win for b (6 vs 6, BH over the family)
    plain = compare_runs(select_runs(find_runs(results), NOW, None, results)[1])
    assert "— b wins (BH-adjusted p ≤ 0.05" in _ips(verdicts(plain))

    out = tmp_path / "out"
    assert main(["compare", "--results", str(results), "--commit", NOW, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    line = _ips([x.removeprefix("- ") for x in text.splitlines()])
    assert f"within noise (±{wide:.1%}, a's noise floor, the larger of the two): no winner" in line
    assert "wins" not in line
    row = next(x for x in text.splitlines() if x.startswith("| images/s, whole job") and "| b | a |" in x)
    assert row.endswith(f"| ±{wide:.1%} *within* |"), row
    assert "## Noise floor" in text and "a/noise.json (" in text  # the stored file, not the history
    pair = next(p for p in json.loads((out / "compare.json").read_text())["pairs"] if p["metric"] == "images_per_s")
    assert pair["within_noise"] is True and pair["clear"] is False
    assert pair["noise_floor"] == pytest.approx(wide, abs=1e-6)


def _pair(a: list[float], b: list[float]) -> PairResult:
    pair = PairResult("x", "y", "images_per_s", compare_samples(a, b))
    adjust_comparisons([pair])  # a family of one
    return pair


def test_too_few_runs_state_the_minimum_detectable_effect() -> None:
    floors = {
        "x": {"images_per_s": Floor("images_per_s", 0.02, 9, 100.0)},
        "y": {"images_per_s": Floor("images_per_s", 0.04, 9, 100.0)},
    }
    # 3 vs 3, 30 % apart: beyond the floor, no p can reach 0.05; the runs that would find it are named
    pair = _pair([130.0, 131.0, 129.0], [100.0, 101.0, 99.0])
    noise = pair_floor(pair, floors)
    assert noise is not None and noise.env == "y" and noise.floor == pytest.approx(1.96 * 0.04)
    assert not noise.within and noise.detectable is None
    assert noise.needed == runs_needed(0.04, shift=pair.stats.ratio - 1) and noise.needed >= 4
    words = pair_detectable(noise, 3, 1)
    assert "minimum detectable effect with 3 runs a side: none" in words
    assert f"{noise.needed} runs a side find a difference of this size (80% power, y's CV 4.0%)" in words
    # 6 vs 6 that overlap: beyond the floor but not clear; what the runs could have found is stated
    pair = _pair([110.0, 125.0, 95.0, 130.0, 100.0, 112.0], [97.0, 104.0, 99.0, 111.0, 101.0, 93.0])
    noise = pair_floor(pair, floors)
    assert noise is not None and not noise.within and pair.p_adjusted > 0.05 and not pair.clear  # type: ignore[operator]
    assert noise.detectable == pytest.approx(detectable(0.04, 6, 1))
    assert f"minimum detectable effect with 6 runs a side: {noise.detectable:.1%} (80% power" in pair_detectable(
        noise, 6, 1
    )
    # one side's floor only: that one is used; neither: no floor, nothing changes
    assert pair_floor(pair, {"x": floors["x"]}).env == "x"  # type: ignore[union-attr]
    assert pair_floor(pair, {}) is None
