"""Telemetry cross-checks (bench/analysis/crosscheck.py) over synthetic records: the sampler's
figures against Slurm's accounting block, and GPU utilisation against SM activity. The
expected figures come from the synthetic writer's catalogue values, not from constants."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.analysis.crosscheck import BUSY_PCT, SM_ACTIVE_LOW, cross_check, cross_check_runs
from bench.records import contract as c
from bench.records.columns import CATALOGUE
from bench.records.read import load_run
from bench.targets.slurm_accounting import accounting
from tests.synthetic_records import RunSpec, write_run

DURATION_S = 60.0
# The synthetic energy counter rises at its catalogue rate (mJ/s) on each GPU.
GPU_ENERGY_J = CATALOGUE[c.GPU_ENERGY].synthetic * DURATION_S / 1000.0


def run_with(tmp_path: Path, acct: dict | None = None, run_id: str = "r1", **spec: object):
    spec = {"gpus": 1, "duration_s": DURATION_S, **spec}
    run_dir = write_run(tmp_path, RunSpec("slurm-a100", run_id, **spec))  # type: ignore[arg-type]
    if acct is not None:
        record = json.loads((run_dir / "run.json").read_text())
        block = accounting([])  # every figure absent, then the ones given
        block.update(acct)
        block["absent"] = {k: v for k, v in block["absent"].items() if not acct.get(f"{k}_mean_pct", acct.get(k))}
        record["scheduler"]["accounting"] = block
        (run_dir / "run.json").write_text(json.dumps(record))
    run = load_run(run_dir, collected=False)
    assert run.schema_problems == [], run.schema_problems
    return run


def test_busy_not_computing(tmp_path: Path) -> None:
    run = run_with(tmp_path, gpu_util=95.0, sm_active=0.25)
    [finding] = cross_check(run)
    assert finding.kind == "busy_not_computing"
    assert "busy, not computing" in finding.text and "SM activity 0.25" in finding.text


@pytest.mark.parametrize("util, active", [(95.0, SM_ACTIVE_LOW + 0.1), (BUSY_PCT - 30, 0.25)])
def test_computing_or_not_busy_is_no_finding(tmp_path: Path, util: float, active: float) -> None:
    assert cross_check(run_with(tmp_path, gpu_util=util, sm_active=active)) == []


def test_record_without_profiling_columns_is_no_finding(tmp_path: Path) -> None:
    run = run_with(tmp_path, gpu_util=95.0)
    for host, df in run.samples.items():
        run.samples[host] = df.drop(columns=[col for col in df.columns if c.GPU_SM_ACTIVE in col])
    assert cross_check(run) == []


def test_slurm_utilisation_far_from_the_samples_is_a_finding(tmp_path: Path) -> None:
    run = run_with(tmp_path, {"gpu_util_mean_pct": 41.0}, gpu_util=90.0, sm_active=0.8)
    [finding] = cross_check(run)
    assert finding.kind == "gpu_util" and "vs 41.0 % in Slurm's accounting" in finding.text


def test_slurm_utilisation_close_to_the_samples_is_no_finding(tmp_path: Path) -> None:
    assert cross_check(run_with(tmp_path, {"gpu_util_mean_pct": 86.0}, gpu_util=90.0, sm_active=0.8)) == []


def test_two_gpus_agree_when_slurm_sums_them(tmp_path: Path) -> None:
    run = run_with(tmp_path, {"gpu_util_mean_pct": 120.0}, gpus=2, gpu_util=60.0, sm_active=0.8)
    assert cross_check(run) == []  # 2 x 60 %: Slurm's plugin added the GPUs up
    run = run_with(tmp_path / "b", {"gpu_util_mean_pct": 95.0}, gpus=2, gpu_util=60.0, sm_active=0.8)
    assert [f.kind for f in cross_check(run)] == ["gpu_util"]  # neither the mean nor the sum


def test_energy_agreeing_within_the_tolerance_is_no_finding(tmp_path: Path) -> None:
    assert cross_check(run_with(tmp_path, {"energy_j": GPU_ENERGY_J * 1.05}, sm_active=0.8)) == []


def test_energy_from_a_node_plugin_is_a_finding(tmp_path: Path) -> None:
    run = run_with(tmp_path, {"energy_j": GPU_ENERGY_J * 2.5}, sm_active=0.8)
    [finding] = cross_check(run)
    assert finding.kind == "energy" and "+150%" in finding.text and "whole node" in finding.text


def test_absent_accounting_is_no_finding(tmp_path: Path) -> None:
    assert cross_check(run_with(tmp_path, {}, gpu_util=90.0, sm_active=0.8)) == []


def test_findings_are_ordered_by_environment_and_run(tmp_path: Path) -> None:
    runs = [
        run_with(tmp_path, {"gpu_util_mean_pct": 10.0}, run_id="r2", gpu_util=95.0, sm_active=0.2),
        run_with(tmp_path, run_id="r1", gpu_util=95.0, sm_active=0.2),
    ]
    lines = [f.line() for f in cross_check_runs(runs)]
    assert [line.split(":")[0] for line in lines] == ["slurm-a100/r1", "slurm-a100/r2", "slurm-a100/r2"]
    assert [f.kind for f in cross_check_runs(runs)] == ["busy_not_computing", "gpu_util", "busy_not_computing"]
