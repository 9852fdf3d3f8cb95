"""timeline.trace.json: each run's phases as Trace Event Format complete events, read back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.commands.report import write_report
from bench.records.read import find_runs
from bench.render.trace import TRACE_FILE
from tests.synthetic_records import RunSpec, write_run


def test_the_trace_has_one_track_per_run_and_its_slices_tile_submit_to_collected(tmp_path: Path) -> None:
    results = tmp_path / "results"
    for env, queue in (("a", 0.0), ("b", 12.0)):
        for i in range(2):
            write_run(results, RunSpec(env, f"{env}{i}", seed=i, queue_wait_s=queue, timeline=True, start=1.79e9 + i))
    report = write_report(results, tmp_path / "reports")
    readme = report.readme.read_text()
    assert "[timeline.trace.json](timeline.trace.json)" in readme
    assert "| a | deliver |" in readme and "| trigger |" not in readme  # no run came from a push: no trigger row
    data = json.loads((report.folder / TRACE_FILE).read_text())
    assert isinstance(data, dict) and isinstance(data["traceEvents"], list)
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in data["traceEvents"] if e["ph"] == "M"}
    processes = {pid: name for (pid, tid), name in names.items() if tid == 0}
    assert sorted(processes.values()) == ["a", "b"]
    origin = data["otherData"]["origin_unix_s"]
    for run in find_runs(results):
        pid = next(p for p, name in processes.items() if name == run.env)
        tid = next(t for (p, t), name in names.items() if p == pid and t and name == run.run_id)
        slices = sorted(
            (e for e in data["traceEvents"] if e["ph"] == "X" and (e["pid"], e["tid"]) == (pid, tid)),
            key=lambda e: e["ts"],
        )
        assert [e["name"] for e in slices] == [
            p["phase"] for p in run.meta["timeline"]["phases"] if p["seconds"] is not None
        ]
        assert all(e["cat"] == "phase" and e["dur"] >= 0 and e["args"]["source"] for e in slices)
        marks = run.meta["timeline"]["marks"]
        # the slices tile submit -> collected: each starts where the one before ended (µs)
        assert slices[0]["ts"] == pytest.approx((marks["submitted"]["time"] - origin) * 1e6, abs=1)
        for before, after in zip(slices, slices[1:]):
            assert after["ts"] == pytest.approx(before["ts"] + before["dur"], abs=1)
        end = slices[-1]["ts"] + slices[-1]["dur"]
        assert end == pytest.approx((marks["collected"]["time"] - origin) * 1e6, abs=1)
    b_queue = [e for e in data["traceEvents"] if e["name"] == "queue" and processes[e["pid"]] == "b"]
    assert [e["dur"] for e in b_queue] == [pytest.approx(12e6, abs=1), pytest.approx(12e6, abs=1)]


def test_no_timeline_no_trace(tmp_path: Path) -> None:
    write_run(tmp_path / "results", RunSpec("a", "a0"))
    report = write_report(tmp_path / "results", tmp_path / "reports")
    assert not (report.folder / TRACE_FILE).exists() and "timeline.trace.json" not in report.readme.read_text()
