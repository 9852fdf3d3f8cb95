"""The PR comment's Markdown, from synthetic run records (tests/synthetic_records.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.commands.comment import render_pr_body
from bench.errors import AtlasError
from tests.synthetic_records import RunSpec, write_run

HEAD = "b" * 40
BASE = "a" * 40


def runs(results: Path, env: str, sha: str, rates: list[float], start: float) -> None:
    for i, rate in enumerate(rates):
        write_run(
            results,
            RunSpec(env=env, run_id=f"{sha[:4]}-{i}", sha=sha, images_per_s=rate, start=start + i * 100, seed=i),
        )


def test_regression_on_one_env_is_flagged_and_envs_are_not_mixed(tmp_path: Path):
    # 5 a side: after Benjamini–Hochberg over the environment's metrics, 3 a side (smallest p 0.10) cannot pass
    runs(tmp_path, "local", BASE, [100, 101, 99, 100.5, 99.5], 1_790_000_000)
    runs(tmp_path, "local", HEAD, [80, 81, 79, 80.5, 79.5], 1_790_001_000)
    # a slower environment with no change: must not be judged against local
    runs(tmp_path, "local-slurm", BASE, [50, 51, 49, 50.5, 49.5], 1_790_000_000)
    runs(tmp_path, "local-slurm", HEAD, [50, 51, 49, 50.5, 49.5], 1_790_001_000)
    body = render_pr_body(tmp_path, HEAD, BASE, report_url="https://example.org/run/1")
    assert f"`{HEAD[:12]}` vs merge-base `{BASE[:12]}`" in body
    assert "### local\n" in body and "### local-slurm\n" in body
    local = body.split("### local\n")[1].split("###")[0]
    slurm = body.split("### local-slurm\n")[1]
    ips_local = next(line for line in local.splitlines() if line.startswith("| images/s"))
    ips_slurm = next(line for line in slurm.splitlines() if line.startswith("| images/s"))
    assert "**regression**" in ips_local
    assert "unchanged" in ips_slurm and "regression" not in ips_slurm
    assert "1 regression(s)" in body or "regression(s)" in body.splitlines()[2]
    headline = body.splitlines()[2]
    assert "images\\_per\\_s on local: -19.8% (threshold 5%, BH-adjusted p=0.0159 over 4 metrics, " in headline
    assert "Mann-Whitney U p=0.00794, 5 vs 5 runs): regression" in headline
    assert body.rstrip().endswith("https://example.org/run/1")
    assert "threshold (5 %)" in body


def test_per_metric_threshold_changes_the_verdict_and_is_shown(tmp_path: Path):
    runs(tmp_path, "local", BASE, [100, 101, 99], 1_790_000_000)
    runs(tmp_path, "local", HEAD, [80, 81, 79], 1_790_001_000)
    body = render_pr_body(tmp_path, HEAD, BASE, thresholds={"images_per_s": 0.25})
    ips = next(line for line in body.splitlines() if line.startswith("| images/s"))
    assert "unchanged" in ips and "images_per_s 25%" in body


def test_missing_baseline_is_said_plainly(tmp_path: Path):
    runs(tmp_path, "local", HEAD, [80, 81, 79], 1_790_001_000)
    body = render_pr_body(tmp_path, HEAD, BASE)
    assert "0 of the merge-base" in body
    assert "no-baseline" in body and "not a pass" in body


def test_no_runs_is_a_clear_error(tmp_path: Path):
    with pytest.raises(AtlasError, match="no runs under"):
        render_pr_body(tmp_path, HEAD, BASE)


def test_a_change_below_the_noise_floor_reads_within_noise(tmp_path: Path):
    # an earlier commit's 4 runs measure how far runs of one commit scatter here (CV ~9 %)
    runs(tmp_path, "local", "c" * 40, [100, 112, 90, 98], 1_789_990_000)
    runs(tmp_path, "local", BASE, [100], 1_790_000_000)
    runs(tmp_path, "local", HEAD, [93], 1_790_001_000)
    body = render_pr_body(tmp_path, HEAD, BASE)
    ips = next(line for line in body.splitlines() if line.startswith("| images/s"))
    # -7 % is past the 5 % threshold: with one run a side and no floor it would be inconclusive
    assert "| -7.0% | unchanged — within noise (±17.7%) |" in ips  # 1.96 x the CV 9.05 %
    assert "Within noise (±x %): a change smaller than the environment's noise floor" in body
    assert "Noise floor (1.96 × the CV of one commit's runs, from the history (4 runs of 1 commits)): " in body
    assert "Minimum detectable effect with 1 run a side" not in body  # one run a side: no test, no MDE
    # no earlier runs: no floor, and the same change is inconclusive
    fresh = tmp_path / "fresh"
    runs(fresh, "local", BASE, [100], 1_790_000_000)
    runs(fresh, "local", HEAD, [93], 1_790_001_000)
    ips = next(line for line in render_pr_body(fresh, HEAD, BASE).splitlines() if line.startswith("| images/s"))
    assert "| -7.0% | inconclusive |" in ips
