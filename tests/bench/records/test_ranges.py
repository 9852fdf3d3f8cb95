"""Issue 22: every number a figure reads is range-checked once, and a refused one makes the
figure unknown ("—" with the reason), never 0, never negative, never 1e305.

Each case is a well-formed synthetic record with ONE bad value; `bench check` (load_run's
problems) must name it and the figures must not use it."""

from __future__ import annotations

import csv
import json
import math
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench.analysis.metrics import run_metrics
from bench.cli import main
from bench.records.read import find_runs, load_run
from tests.synthetic_records import RunSpec, write_run


def record(tmp_path: Path, change: Callable[[dict[str, Any], Path], None], gpus: int = 1) -> Path:
    run_dir = write_run(tmp_path / "results", RunSpec("a", "a0", gpus=gpus, duration_s=30))
    meta = json.loads((run_dir / "run.json").read_text())
    change(meta, run_dir)
    (run_dir / "run.json").write_text(json.dumps(meta, allow_nan=True))
    return run_dir


def train_times(run_dir: Path, change: Callable[[list[dict[str, Any]]], None]) -> None:
    events = [json.loads(line) for line in (run_dir / "train.jsonl").read_text().splitlines()]
    change(events)
    (run_dir / "train.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))


def cost(meta: dict[str, Any], key: str, value: Any) -> None:
    meta["environment"]["cost"][key] = value


def cgroup(meta: dict[str, Any], key: str, value: Any) -> None:
    meta["hardware"]["cgroup"][key] = value


BAD_VALUES = {
    "negative cpu_limit_cores": (lambda m, d: cgroup(m, "cpu_limit_cores", -4), "cpu_limit_cores"),
    "1e308 cpu_limit_cores": (lambda m, d: cgroup(m, "cpu_limit_cores", 1e308), "cpu_limit_cores"),
    "negative GPU rate": (lambda m, d: cost(m, "usd_per_gpu_hour", -2), "usd_per_gpu_hour"),
    "1e308 GPU rate": (lambda m, d: cost(m, "usd_per_gpu_hour", 1e308), "usd_per_gpu_hour"),
    "NaN GPU rate": (lambda m, d: cost(m, "usd_per_gpu_hour", math.nan), "usd_per_gpu_hour"),
    "negative CPU rate": (lambda m, d: cost(m, "usd_per_cpu_hour", -0.05), "usd_per_cpu_hour"),
    "infinite CPU rate": (lambda m, d: cost(m, "usd_per_cpu_hour", math.inf), "usd_per_cpu_hour"),
}


@pytest.mark.parametrize("case", sorted(BAD_VALUES))
def test_a_refused_rate_or_core_count_makes_cost_unknown_and_check_names_it(tmp_path: Path, case: str) -> None:
    change, key = BAD_VALUES[case]
    run = load_run(record(tmp_path, change), "a")
    assert any(key in p and "refused" in p for p in run.problems), run.problems
    m = run_metrics(run)
    assert m.cost_usd is None and m.cost_per_1000_images_usd is None
    assert "unknown" in m.cost_note or key in m.cost_note or "refused" in m.cost_note


def test_missing_hardware_is_cost_unknown_not_zero(tmp_path: Path) -> None:
    """A CPU-only cloud run (0 GPUs x rate = $0) whose core count is missing: the per-core part
    is unknown, so the cost is, and bench check says why."""
    run = load_run(record(tmp_path, lambda m, d: m.pop("hardware"), gpus=0), "a")
    assert any("CPU allowance" in p for p in run.problems)
    assert run_metrics(run).cost_usd is None


def test_a_sound_record_still_has_its_cost(tmp_path: Path) -> None:
    run = load_run(record(tmp_path, lambda m, d: None), "a")
    assert run.problems == []
    m = run_metrics(run)
    assert m.cost_usd is not None and m.cost_usd > 0 and m.time_to_train_s is not None


def test_overlapping_attempts_are_charged_once(tmp_path: Path) -> None:
    def overlap(meta: dict[str, Any], _: Path) -> None:
        meta["previous_attempts"] = [{"start_time": meta["start_time"] - 10, "end_time": meta["end_time"]}]

    run = load_run(record(tmp_path, overlap), "a")
    assert any("overlap" in p for p in run.problems)
    m = run_metrics(run)
    assert m.wall_s == pytest.approx(40.0)  # 10 s before + the 30 s run, not 40 + 30


@pytest.mark.parametrize(
    "shift",
    [
        pytest.param(lambda ev: ev[-1].__setitem__("time", ev[-1]["time"] + 3600), id="run_stop-1h-later"),
        pytest.param(lambda ev: [e.__setitem__("time", 0) for e in ev], id="all-times-0"),
        pytest.param(lambda ev: [e.__setitem__("time", ev[0]["time"]) for e in ev], id="all-times-equal"),
    ],
)
def test_a_train_log_clock_shift_excludes_time_to_train_with_its_reason(tmp_path: Path, shift) -> None:
    run_dir = record(tmp_path, lambda m, d: None)
    train_times(run_dir, shift)
    run = load_run(run_dir, "a")
    reason = [p for p in run.problems if "time to train excluded" in p]
    assert reason, run.problems
    m = run_metrics(run)
    assert m.time_to_train_s is None
    assert m.wall_s is not None and m.wall_s <= 31


def test_an_extra_samples_file_of_no_named_host_is_a_problem_not_summed(tmp_path: Path) -> None:
    run_dir = record(tmp_path, lambda m, d: None)
    before = run_metrics(load_run(run_dir, "a"))
    shutil.copy(run_dir / "samples-node1.csv", run_dir / "samples-node2.csv")
    run = load_run(run_dir, "a")
    assert any("samples-node2.csv" in p and "one samples file per host" in p for p in run.problems)
    after = run_metrics(run)
    assert after.cpu_mean_pct == pytest.approx(before.cpu_mean_pct)
    assert after.peak_rss_gb == pytest.approx(before.peak_rss_gb)


def test_a_symlinked_env_folder_is_no_phantom_environment(tmp_path: Path, capsys) -> None:
    run_dir = record(tmp_path, lambda m, d: None)
    results = run_dir.parent.parent
    (results / "b").symlink_to(results / "a", target_is_directory=True)
    (results / "a" / "a1").symlink_to(run_dir, target_is_directory=True)
    assert [(r.env, r.run_id) for r in find_runs(results)] == [("a", "a0")]


@pytest.mark.slow
@pytest.mark.parametrize("case", ["NaN GPU rate", "1e308 GPU rate", "negative cpu_limit_cores"])
def test_compare_and_report_leave_a_refused_value_unknown(tmp_path: Path, capsys, case: str) -> None:
    """Through the commands: no traceback, check exits 1 naming it, runs.csv has no cost, never inf."""
    change, key = BAD_VALUES[case]
    run_dir = record(tmp_path, change)
    write_run(tmp_path / "results", RunSpec("b", "b0", gpus=1, duration_s=30, seed=3))
    results = run_dir.parent.parent
    assert main(["check", str(results)]) == 1
    assert key in capsys.readouterr().out
    assert main(["compare", "--results", str(results)]) == 0
    capsys.readouterr()
    assert main(["report", "--results", str(results), "--out", str(tmp_path / "reports")]) == 0
    with next((tmp_path / "reports").glob("*/runs.csv")).open() as fh:
        rows = list(csv.DictReader(fh))
    text = {"env", "run_id", "status", "git_sha", "config_sha256", "cost_note"}
    for row in rows:
        for key, value in row.items():
            if key not in text and not key.endswith("_source") and value != "":
                assert math.isfinite(float(value)) and (float(value) >= 0 or "cost" not in key), (key, value)
    assert next(r for r in rows if r["env"] == "a")["cost_usd"] == ""
