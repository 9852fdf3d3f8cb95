"""Accounting over attempts: wall time, GPU energy and cost sum every attempt (a killed
one up to its last sample), never the gap between attempts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.analysis.metrics import run_metrics
from bench.records.read import load_run
from tests.synthetic_records import RunSpec, write_run


def _resumed(tmp_path: Path) -> tuple[Path, float]:
    """A 100 s synthetic run whose samples and log are split into three attempts:
    0-30 s (preempted, with an end), 40-60 s (killed: no end), 70-100 s (this one)."""
    spec = RunSpec("e", "r", duration_s=100, gpus=1)
    write_run(tmp_path, spec)
    run_dir = tmp_path / "e" / "r"
    meta = json.loads((run_dir / "run.json").read_text())
    t0 = meta["start_time"]
    meta["previous_attempts"] = [
        {"start_time": t0, "end_time": t0 + 30, "exit": {"status": "preempted"}},
        {"start_time": t0 + 40, "end_time": None, "exit": {"status": "running"}},
    ]
    meta["start_time"] = t0 + 70
    (run_dir / "run.json").write_text(json.dumps(meta))
    csv = run_dir / "samples-node1.csv"
    lines = csv.read_text().splitlines()
    keep = [
        ln for ln in lines[1:] if not (30 < float(ln.split(",")[0]) - t0 < 40 or 60 < float(ln.split(",")[0]) - t0 < 70)
    ]
    csv.write_text("\n".join([lines[0], *keep]) + "\n")
    return run_dir, t0


def test_wall_energy_and_cost_sum_every_attempt(tmp_path: Path) -> None:
    run_dir, t0 = _resumed(tmp_path)
    run = load_run(run_dir)
    m = run_metrics(run)
    df = run.samples["node1"]
    last_killed = float(df["time"][(df["time"] >= t0 + 40) & (df["time"] < t0 + 70)].max())
    wall = 30 + (last_killed - (t0 + 40)) + (run.meta["end_time"] - (t0 + 70))
    assert m.values["wall_s"] == pytest.approx(wall)
    assert m.values["attempts"] == 3
    one = json.loads((run_dir / "run.json").read_text())
    one["previous_attempts"], one["start_time"] = [], t0 + 70
    (run_dir / "run.json").write_text(json.dumps(one))
    last_only = run_metrics(load_run(run_dir))
    assert last_only.values["cost_usd"] < m.values["cost_usd"]  # the old code charged this: the last attempt only
    assert last_only.values["wall_s"] == pytest.approx(run.meta["end_time"] - (t0 + 70))
