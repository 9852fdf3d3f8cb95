"""Issue 36 item 4: every time figure is a timeline phase or a named sum of phases.

Synthetic records in the on-disk format (`tests/synthetic_records.py`, timelines as
collection builds them), read by `load_run` and reduced by the catalogue as `bench
compare` does: each named sum equals its phases of the same run, a phase the kind does
not have adds nothing and is said so, any other unknown phase leaves the sum unknown.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.analysis.metrics import METRICS, run_metrics
from bench.analysis.time_sums import SUM_BY_KEY, SUMS, lacked, median_run
from bench.records.read import load_run
from bench.records.timeline import build_timeline, mark
from tests.synthetic_records import RunSpec, write_run


def _phases(m, names) -> float:
    return sum(v for p in names if (v := m.values.get(f"phase_{p}_s")) is not None)


@pytest.mark.parametrize("queue_resolution_s", [None, 1.0, 0.001], ids=["local", "slurm", "kube"])
def test_each_named_sum_is_its_phases_of_the_same_run(tmp_path: Path, queue_resolution_s) -> None:
    run = write_run(tmp_path, RunSpec("e", "r1", duration_s=43, queue_wait_s=12.4, timeline=True,
                                      queue_resolution_s=queue_resolution_s))  # fmt: skip
    m = run_metrics(load_run(run))
    for phase_sum in SUMS:
        if phase_sum.key == "push_to_result_s":
            assert m.values[phase_sum.key] is None  # no push, no push to result (not submit to result again)
            continue
        assert m.values[phase_sum.key] == pytest.approx(_phases(m, phase_sum.phases), abs=1e-6), phase_sum.key
    assert m.time_to_train_s == pytest.approx(m.phase_warmup_s + m.phase_train_s)
    assert m.startup_s == pytest.approx(m.phase_launch_s + m.phase_warmup_s)
    assert m.platform_overhead_s == pytest.approx(m.submit_to_result_s - m.phase_train_s)
    meta = json.loads((run / "run.json").read_text())
    marks = meta["timeline"]["marks"]
    assert m.submit_to_result_s == pytest.approx(marks["collected"]["time"] - marks["submitted"]["time"], abs=1e-5)
    if queue_resolution_s is None:  # a bare process: no scheduler, which is neither 0 nor unknown
        assert m.queue_wait_s is None and lacked(m, "queue_wait_s") == "no scheduler"
        assert lacked(m, "phase_queue_s") == "no scheduler" and lacked(m, "phase_stage_s") == "no staging step"
    else:
        assert lacked(m, "queue_wait_s") is None and m.queue_wait_s == pytest.approx(12.4, abs=1.0)


def test_a_sum_across_a_one_second_clock_keeps_the_resolution_of_its_ends(tmp_path: Path) -> None:
    """Platform overhead on Slurm: queue is read in whole seconds, but the marks between
    phases cancel; the sum is read on the bench host's and the job's millisecond clocks."""
    m = run_metrics(load_run(write_run(tmp_path, RunSpec("e", "r1", timeline=True, queue_resolution_s=1.0))))
    assert m.resolutions["phase_queue_s"] == 1.0
    assert m.resolutions["platform_overhead_s"] < 0.01 and m.resolutions["submit_to_result_s"] < 0.01
    assert m.resolutions["startup_s"] >= 1.0  # granted (slurmctld) -> first iteration: one end is whole seconds


def test_a_pushed_run_adds_its_trigger(tmp_path: Path) -> None:
    run = write_run(tmp_path, RunSpec("e", "r1", timeline=True))
    meta = json.loads((run / "run.json").read_text())
    marks = meta["timeline"]["marks"]
    marks["pushed"] = mark(marks["submitted"]["time"] - 4.0, "bench-host", 0.001)
    meta["timeline"] = build_timeline(marks, checkpoint_s=0.0)
    (run / "run.json").write_text(json.dumps(meta))
    m = run_metrics(load_run(run))
    assert m.phase_trigger_s == pytest.approx(4.0)
    assert m.push_to_result_s == pytest.approx(m.phase_trigger_s + m.submit_to_result_s)


def test_an_unknown_phase_leaves_every_sum_holding_it_unknown(tmp_path: Path) -> None:
    """The platform's marks could not be read: queue is unknown (not "no scheduler"), so the
    sums over it are unknown, though submitted and collected are both known."""
    run = write_run(tmp_path, RunSpec("e", "r1", timeline=True, queue_resolution_s=1.0))
    meta = json.loads((run / "run.json").read_text())
    reasons = {"queue": "the platform's marks could not be read: sacct timed out"}
    meta["timeline"] = build_timeline(meta["timeline"]["marks"], reasons, checkpoint_s=0.0)
    (run / "run.json").write_text(json.dumps(meta))
    m = run_metrics(load_run(run))
    assert m.queue_wait_s is None and lacked(m, "queue_wait_s") is None
    assert m.submit_to_result_s is None and m.platform_overhead_s is None
    assert m.time_to_train_s is not None and m.startup_s is not None  # their phases are all known


def test_no_time_figure_outside_the_vocabulary_reaches_the_report_tables() -> None:
    """Every time figure of the summary or runs table is a phase, a named sum or the queue
    wait (the queue phase); the rest (wall time, resumed starts' warm-up) stay in runs.csv."""
    timed = {m.key for m in METRICS if m.unit == "s" and (m.in_summary or m.in_runs_table)}
    assert timed <= {*SUM_BY_KEY, "queue_wait_s"}, timed - {*SUM_BY_KEY, "queue_wait_s"}
    assert {"wall_s", "restart_startup_s"}.isdisjoint(timed)


def test_the_median_run_is_the_one_whose_total_is_the_median(tmp_path: Path) -> None:
    metrics = [
        run_metrics(load_run(write_run(tmp_path, RunSpec("e", f"r{i}", seed=i, duration_s=d, timeline=True))))
        for i, d in enumerate((40, 90, 60, 75))
    ]
    chosen = median_run(metrics, "e")
    totals = sorted(m.submit_to_result_s for m in metrics)
    assert chosen is not None and chosen.run_id == "r2" and chosen.total == totals[1]  # of 4: the lower middle
    assert (chosen.low, chosen.high, chosen.runs) == (totals[0], totals[-1], 4)
