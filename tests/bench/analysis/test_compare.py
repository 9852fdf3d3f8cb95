"""compare/stats on synthetic records written in the real on-disk format (cost models: test_cost.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.analysis.compare import compare_runs
from bench.analysis.metrics import fmt
from bench.analysis.stats import compare_samples, olympic_mean
from bench.cli import main
from bench.errors import AtlasError
from bench.records.read import find_runs
from bench.render.tables import verdicts
from tests.synthetic_records import RunSpec, write_run

SATORI = {
    "model": "onprem",
    "electricity_usd_per_kwh": 0.0839,
    "pue": 1.2,
    "node_capex_usd": 50000,
    "node_life_years": 5,
    "gpus_per_node": 4,
}
MOC = {"model": "cloud", "usd_per_gpu_hour": 2.0}


def two_envs(tmp_path: Path, moc_rate: float = 100.0, runs: int = 3) -> Path:
    for i in range(runs):
        write_run(
            tmp_path,
            RunSpec("satori", f"s{i}", seed=i, gpus=1, images_per_s=200.0, start=1.79e9 + i * 100, cost=SATORI),
        )
        write_run(
            tmp_path,
            RunSpec(
                "moc",
                f"m{i}",
                seed=50 + i,
                gpus=1,
                images_per_s=moc_rate,
                gpu_util=30,
                queue_wait_s=12.0,
                start=1.79e9 + i * 100 + 10,
                cost=MOC,
            ),
        )
    return tmp_path


def test_olympic_mean_drops_extremes() -> None:
    assert olympic_mean([1.0, 2.0, 3.0, 100.0]) == 2.5
    assert olympic_mean([4.0, 6.0]) == 5.0
    assert olympic_mean([None, 7.0]) == 7.0
    assert olympic_mean([]) is None


def test_bootstrap_is_seeded_and_mann_whitney_needs_three() -> None:
    a, b = [10.0, 11.0, 12.0], [5.0, 5.5, 6.0]
    one, two = compare_samples(a, b), compare_samples(a, b)
    assert one == two
    assert one.ratio == pytest.approx(2.0)
    assert one.ci_low <= 2.0 <= one.ci_high
    assert one.p_value == pytest.approx(0.1)  # exact two-sided minimum for 3 vs 3
    assert compare_samples(a[:2], b).p_value is None


def test_compare_two_envs_finds_the_faster_one(tmp_path: Path) -> None:
    result = compare_runs(find_runs(two_envs(tmp_path)))
    assert result.envs == ["moc", "satori"] and result.baseline == "moc"
    s, m = result.summaries["satori"], result.summaries["moc"]
    assert s.runs == m.runs == 3
    assert s.median["images_per_s"] == pytest.approx(200, rel=0.05)
    assert m.median["queue_wait_s"] == 12.0
    assert m.median["cost_usd"] > 0 and s.median["energy_wh"] > 0
    ips = next(p for p in result.pairs if p.metric == "images_per_s")
    assert ips.env_a == "satori" and ips.stats.ratio == pytest.approx(2.0, rel=0.05)
    assert ips.stats.ci_low > 1 and ips.stats.p_value == pytest.approx(0.1)
    text = "\n".join(verdicts(result))
    assert "images/s, whole job (steady, median): satori vs moc: " in text and "% faster" in text
    # 3 runs a side cannot reach p <= 0.05 (the smallest p there is 0.10): no winner is named
    assert "not enough runs to judge (n = 3 vs 3; the smallest possible p is 0.10" in text and "wins" not in text
    four = compare_runs(find_runs(two_envs(tmp_path / "four", runs=4)))
    (ips4,) = [p for p in four.pairs if p.metric == "images_per_s"]
    assert ips4.stats.p_value == pytest.approx(2 / 70) and ips4.clear
    assert "satori wins (BH-adjusted p ≤ 0.05 and the interval excludes 1)" in "\n".join(verdicts(four))


def test_runs_of_another_config_are_excluded_unless_allowed(tmp_path: Path) -> None:
    write_run(tmp_path, RunSpec("a", "r1"))
    write_run(tmp_path, RunSpec("a", "r0", start=1.7e9))
    write_run(tmp_path, RunSpec("b", "r2", config_sha256="f" * 64))
    result = compare_runs(find_runs(tmp_path))
    assert result.envs == ["a"] and [m.run_id for m in result.runs] == ["r0", "r1"]
    [excluded] = result.excluded
    assert excluded.run_id == "r2" and "ffffffffffff" in excluded.reason and "--allow-different" in excluded.reason
    assert compare_runs(find_runs(tmp_path), allow_different=True).envs == ["a", "b"]


def test_unknown_baseline_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(AtlasError, match="--baseline 'nope'"):
        compare_runs(find_runs(two_envs(tmp_path, runs=1)), baseline="nope")


def test_fmt_is_stable() -> None:
    assert [fmt(v) for v in (None, 0, 0.000123456, 1.23456, 123.456, 12345.6, -2.5)] == [
        "—",
        "0",
        "0.000123",
        "1.23",
        "123",
        "12,346",
        "-2.50",
    ]
    assert fmt(float("nan")) == "—"


def test_only_successful_clean_runs_of_one_config_are_compared(tmp_path: Path) -> None:
    two_envs(tmp_path)
    write_run(tmp_path, RunSpec("moc", "failed", status="failed", start=1.8e9, cost=MOC))
    write_run(tmp_path, RunSpec("moc", "dirty", dirty=True, start=1.8e9, cost=MOC, images_per_s=1.0))
    write_run(tmp_path, RunSpec("satori", "other", config_sha256="e" * 64, start=1.8e9, cost=SATORI))
    (tmp_path / "satori" / "s0" / "run.json").write_text('{"schema_version": 1}')
    result = compare_runs(find_runs(tmp_path))
    reasons = {e.run_id: e.reason for e in result.excluded}
    assert sorted(reasons) == ["dirty", "failed", "other", "s0"]
    assert "exit status failed" in reasons["failed"] and "--allow-dirty" in reasons["dirty"]
    assert "other configuration" in reasons["other"] and "empty record" in reasons["s0"]
    assert result.summaries["moc"].runs == 3 and result.summaries["satori"].runs == 2
    assert result.summaries["moc"].median["images_per_s"] == pytest.approx(100, rel=0.05)  # the dirty run's 1.0 is out
    with_dirty = compare_runs(find_runs(tmp_path), allow_dirty=True)
    assert with_dirty.summaries["moc"].runs == 4


def test_unknown_gpus_and_missing_rates_are_unknown_not_zero(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, RunSpec("moc", "m1", gpus=0, cost=MOC))
    meta = json.loads((run_dir / "run.json").read_text())
    meta["hardware"]["gpus"] = None
    del meta["shape"]  # nothing says how many GPUs ran
    (run_dir / "run.json").write_text(json.dumps(meta))
    [m] = compare_runs(find_runs(tmp_path)).runs
    assert m.gpus is None and m.cost_usd is None and "GPU count unknown" in m.cost_note
    old = write_run(tmp_path / "old", RunSpec("moc", "m2", environment=False))
    [m2] = compare_runs(find_runs(old.parent.parent)).runs
    assert m2.cost_usd is None and "no environment facts" in m2.cost_note


def test_imported_runs_are_compared_with_imports_and_recorded_runs_only_when_allowed(tmp_path: Path) -> None:
    """An import's exit status and config are unknown by construction, not failures."""
    from tests.bench.importers.conftest import SAMPLES

    two_envs(tmp_path)  # recorded runs of experiment smoke
    for run_id, sample in (("i1", "sar-u-r-12h.txt"), ("i2", "sar-u-no-ampm.txt")):
        args = ["--env", "study", "--run-id", run_id, "--experiment", "smoke", "--format", "sar"]
        assert main(["import", *args, "--results", str(tmp_path), str(SAMPLES / sample)]) == 0
    mixed = compare_runs(find_runs(tmp_path))
    reasons = {(e.env, e.run_id): e.reason for e in mixed.excluded}
    assert {"study"} == {env for env, _ in reasons} and "configuration unknown (imported)" in reasons[("study", "i1")]
    assert "study" in compare_runs(find_runs(tmp_path), allow_different=True).envs
    imports = compare_runs(find_runs(tmp_path, ["study"]))
    assert [m.run_id for m in imports.runs] == ["i1", "i2"] and imports.excluded == []
