"""`bench pr`'s default runs a side: the count against textbook figures and a simulation of
the exact test, and the command's choice on results trees written by the synthetic recorder."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import mannwhitneyu, norm

from bench.analysis.sample_size import (
    ARE_MANN_WHITNEY,
    MAX_RUNS,
    Spread,
    default_runs,
    detectable_shift,
    fewest_runs,
    pooled_cv,
    runs_needed,
)
from bench.analysis.stats import smallest_p
from tests.synthetic_records import RunSpec, write_run

REPO = Path(__file__).resolve().parents[3]


def test_the_fewest_runs_are_those_whose_smallest_p_reaches_alpha() -> None:
    assert fewest_runs() == 4 and smallest_p(3, 3) > 0.05 >= smallest_p(4, 4)
    assert runs_needed(0.0) == 4 and runs_needed(0.01) == 4  # a steady figure still needs 4 to judge


def test_the_count_follows_lehrs_sixteen_over_the_efficiency_of_the_test() -> None:
    # A shift of one standard deviation (CV = shift) at alpha 0.05, 80 % power: the t test
    # needs 2 (1.95996 + 0.84162)^2 = 15.70 a side (Lehr: "16"); Mann-Whitney 15.70 / (3/pi)
    # = 16.44, plus Guenther's 1.96^2 / 4 = 0.96 for small samples: 17.4, so 18.
    n_t = 2 * (norm.ppf(0.975) + norm.ppf(0.80)) ** 2
    assert round(n_t, 2) == 15.70 and ARE_MANN_WHITNEY == pytest.approx(0.9549, abs=1e-4)
    assert runs_needed(0.10) == 18
    assert runs_needed(0.05) == math.ceil(n_t / 4 / ARE_MANN_WHITNEY + 1.96**2 / 4) == 6
    assert runs_needed(0.10, shift=0.20) == runs_needed(0.05)  # only CV / shift matters
    for cv in (0.05, 0.08, 0.12):  # the inverse, above the floor of 4: the count finds the 10 % it was sized for
        n = runs_needed(cv)
        assert detectable_shift(cv, n) <= 0.10 < detectable_shift(cv, n - 1)


@pytest.mark.parametrize("cv", [0.05, 0.06, 0.08, 0.10])
def test_a_simulation_of_the_exact_test_finds_about_80_percent_power_at_the_count(cv: float) -> None:
    rng = np.random.default_rng(7)
    n = runs_needed(cv)

    def power(m: int) -> float:
        a, b = rng.normal(1.0, cv, (4000, m)), rng.normal(1.1, cv, (4000, m))  # a 10 % shift
        return float((mannwhitneyu(a, b, axis=1, alternative="two-sided").pvalue <= 0.05).mean())

    assert 0.74 <= power(n) <= 0.90
    assert power(n - 1) < 0.80  # and one run fewer would not do


def test_the_spread_is_pooled_within_commits() -> None:
    # two commits 2x apart, each scattering 5 %: the spread is 5 %, not the code change
    cv, runs = pooled_cv([[95.0, 100.0, 105.0], [190.0, 200.0, 210.0], [7.0]])
    assert runs == 6 and cv == pytest.approx(math.sqrt(4 * 0.05**2 / 4))
    assert pooled_cv([[1.0, 2.0], [5.0]]) is None  # 2 runs in a group of two or more: too few


def test_the_choice_says_why_and_when_the_most_cannot_find_10_percent() -> None:
    none = default_runs(["local"], [])
    assert none.runs == 4 and not none.can_detect and "no earlier runs of local" in none.why
    calm = default_runs(["local"], [Spread("local", "images_per_s", 0.02, 9), Spread("other", "x", 0.5, 9)])
    assert calm.runs == 4 and calm.can_detect and "images_per_s varies 2.0% (CV) over 9 earlier runs" in calm.why
    loud = default_runs(["local"], [Spread("local", "time_to_train_s", 0.2, 6)])
    assert loud.runs == MAX_RUNS and not loud.can_detect
    # 2.8016 x 0.2 x sqrt(2 / ((10 - 0.96) x 3/pi)) = 0.27
    assert "a 10% change needs 67 a side, 10 a side find only a 27% change or larger" in loud.why


def _pr_choice(results: Path, cwd: Path) -> str:
    """The line `bench pr` prints for its default runs (it then stops: cwd is no git checkout)."""
    done = subprocess.run(
        [sys.executable, "-m", "bench", "pr", "--pr", "1", "--base", "main", "--env", "local"]
        + ["--results", str(results)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = [line for line in done.stdout.splitlines() if " runs a side" in line]
    assert len(lines) == 1, done.stdout + done.stderr
    return lines[0]


def _run_medians(results: Path) -> dict[str, list[float]]:
    """Per commit, each run's median images/s read straight from its train.jsonl, after
    warm-up (the first fifth of the train lines, the figure's definition)."""
    out: dict[str, list[float]] = {}
    for run in sorted((results / "local").iterdir()):
        if not (run / "run.json").is_file():
            continue
        sha = json.loads((run / "run.json").read_text())["git"]["sha"]
        lines = [json.loads(x) for x in (run / "train.jsonl").read_text().splitlines()]
        rates = [x["images_per_s"] for x in lines if x["event"] == "train"]
        out.setdefault(sha, []).append(float(np.median(rates[max(1, len(rates) // 5) :])))
    return out


def test_bench_pr_sizes_its_runs_from_the_earlier_runs_in_the_results_tree(tmp_path: Path) -> None:
    cwd = tmp_path / "not-a-checkout"
    cwd.mkdir()
    from bench.analysis.regression import pr_family

    assert len(pr_family()) == 14  # a PR judges 14 figures together (Benjamini–Hochberg)
    assert "6 runs a side: no earlier runs of local" in _pr_choice(tmp_path / "empty", cwd)

    # two commits, each three runs scattering about 4 % in images/s (the noisiest figure)
    scattered = tmp_path / "scattered"
    for c, (sha, base) in enumerate((("a" * 40, 100.0), ("b" * 40, 140.0))):
        for i, f in enumerate((0.96, 1.0, 1.04)):
            write_run(scattered, RunSpec("local", f"r{c}{i}", sha=sha, images_per_s=base * f, seed=c * 3 + i))
    groups = _run_medians(scattered)
    sq = sum(((v / np.mean(vs) - 1) ** 2) for vs in groups.values() for v in vs)
    cv = math.sqrt(sq / 4)  # two commits of three: 4 degrees of freedom
    z = norm.ppf(1 - 0.05 / 14 / 2)  # a lone changed figure among 14 must reach 0.05 / 14
    need = math.ceil(2 * ((z + norm.ppf(0.8)) * cv / 0.1) ** 2 * math.pi / 3 + z**2 / 4)
    line = _pr_choice(scattered, cwd)
    assert 7 <= need <= MAX_RUNS and line.startswith(f"atlas: {need} runs a side: images_per_s varies "), line
    assert f"{cv:.1%} (CV) over 6 earlier runs of local" in line and "find a 10% change" in line

    # a run twice as fast in one commit: 10 runs cannot find 10 %, and it says so
    write_run(scattered, RunSpec("local", "r99", sha="a" * 40, images_per_s=200.0, seed=99))
    assert "10 runs a side (the most)" in _pr_choice(scattered, cwd)


def test_the_pr_comment_says_why_it_ran_as_many_runs_as_it_did(tmp_path: Path) -> None:
    from bench.analysis.run_index import read_index
    from bench.analysis.sample_size import spreads
    from bench.commands.comment import render_pr_body
    from bench.render.escape import md

    base, head = "a" * 40, "b" * 40
    for c, sha in enumerate((base, head)):
        for i in range(4):
            write_run(tmp_path, RunSpec("local", f"{c}{i}", sha=sha, start=1_790_000_000 + 1000 * c + 100 * i, seed=i))
    choice = default_runs(["local"], spreads([r.entry for r in read_index(tmp_path, ["local"])], "smoke"))
    assert choice.runs == 4 and choice.can_detect  # synthetic runs scatter about 1 %
    body = render_pr_body(tmp_path, head, base, ["local"], runs_note=choice.why)
    assert body.rstrip().splitlines()[-1] == f"Runs: {md(choice.why, 600)}."
