"""Issue 31: a timeline whose values break its physical rules is named and shown unknown.

Real synthetic records with a collected timeline, one value changed, read by `load_run`
and the commands (`check`, `compare`, `report`) as a user runs them.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from bench.analysis.metrics import run_metrics
from bench.cli import main
from bench.errors import AtlasError
from bench.records.read import load_run
from bench.records.timeline import mark, pushed_at
from tests.synthetic_records import RunSpec, write_run


def _record(root: Path, change) -> Path:
    run = write_run(root, RunSpec("slurmy", "r1", duration_s=30, log_every_s=2, timeline=True))
    meta = json.loads((run / "run.json").read_text())
    change(meta["timeline"])
    (run / "run.json").write_text(json.dumps(meta))
    return run


def _phase(timeline: dict, name: str) -> dict:
    return next(p for p in timeline["phases"] if p["phase"] == name)


def _set(name: str, key: str, value: Any):
    return lambda tl: _phase(tl, name).__setitem__(key, value)


def test_a_sound_timeline_has_no_problem(tmp_path: Path) -> None:
    data = load_run(_record(tmp_path, lambda tl: None))
    assert data.problems == []
    m = run_metrics(data)
    assert m.phase_deliver_s == pytest.approx(1.0) and m.submit_to_result_s is not None


@pytest.mark.parametrize(
    ("change", "phase", "named"),
    [
        (_set("train", "seconds", 1e308), "train", "are not end - start"),
        (_set("train", "seconds", 1e9), "train", "are not end - start"),
        (_set("deliver", "seconds", 0), "deliver", "are not end - start"),  # marks 1 s apart
        (_set("deliver", "resolution_s", 1e308), "deliver", "resolution"),
        (_set("train", "start", math.nan), "train", "not a finite number"),
        (_set("train", "start", 1e308), "train", "not a finite number"),
        (_set("train", "start", -5), "train", "not a finite number"),
    ],
    ids=["seconds-1e308", "seconds-1e9", "deliver-0", "resolution-1e308", "start-nan", "start-1e308", "start-neg"],
)
def test_a_phase_that_breaks_its_rules_is_named_and_unknown(tmp_path: Path, change, phase: str, named: str) -> None:
    data = load_run(_record(tmp_path, change))
    assert any(f"timeline phase {phase}" in p and named in p for p in data.problems), data.problems
    assert run_metrics(data).values[f"phase_{phase}_s"] is None


@pytest.mark.parametrize("name", ["submitted", "pushed"])
def test_a_mark_after_collected_is_a_named_negative_span_not_a_tiny_one(tmp_path: Path, name: str) -> None:
    def late(tl: dict) -> None:
        tl["marks"][name] = mark(tl["marks"]["collected"]["time"] + 30.0, "bench-host", 0.001)

    data = load_run(_record(tmp_path, late))
    assert any(f"mark {name} is -30 s after collected" in p or f"mark {name} is 30 s after" in p
               for p in data.problems), data.problems  # fmt: skip
    m = run_metrics(data)
    key = "submit_to_result_s" if name == "submitted" else "push_to_result_s"
    assert m.values[key] is None and m.at_resolution(key) is None


@pytest.mark.parametrize("name", ["submitted", "pushed"])
def test_ten_years_between_submit_and_collect_is_implausible(tmp_path: Path, name: str) -> None:
    def old(tl: dict) -> None:
        tl["marks"][name] = mark(tl["marks"]["collected"]["time"] - 10 * 365.25 * 86400, "bench-host", 0.001)

    data = load_run(_record(tmp_path, old))
    assert any(f"mark {name} is 3652.5 days before collected" in p for p in data.problems), data.problems
    m = run_metrics(data)
    assert m.submit_to_result_s is None if name == "submitted" else m.push_to_result_s is None


def test_atlas_pushed_at_one_is_refused_at_submit_and_its_mark_on_read(tmp_path: Path) -> None:
    with pytest.raises(AtlasError, match="not a time between 2000 and 2100"):
        pushed_at({"ATLAS_PUSHED_AT": "1"})
    data = load_run(_record(tmp_path, lambda tl: tl["marks"].__setitem__("pushed", mark(1.0, "bench-host", 0.001))))
    assert run_metrics(data).push_to_result_s is None  # was 1,790,000,034 s
    assert any("mark pushed" in p and "beyond the plausible" in p for p in data.problems)


@pytest.mark.parametrize(
    "change",
    [
        _set("train", "start", math.nan),
        _set("queue", "start", 1e308),
        _set("finish", "end", -5),
        _set("train", "phase", "teleport"),
        lambda tl: tl["phases"].append({"phase": "teleport", "start": 1.0, "end": 2.0, "seconds": 1.0}),
        lambda tl: tl["phases"].insert(0, ["not", "an", "object"]),
        lambda tl: tl["marks"].__setitem__("exit", "soon"),
    ],
    ids=["start-nan", "start-1e308", "end-neg", "renamed", "unknown-phase", "list-phase", "string-mark"],
)
def test_check_compare_and_report_read_a_damaged_timeline_without_a_traceback(
    tmp_path: Path, change, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    _record(results, change)
    assert main(["check", str(results)]) == 1
    assert main(["compare", "--results", str(results), "--out", str(tmp_path / "cmp"), "--allow-different"]) in (0, 2)
    assert main(["report", "--results", str(results), "--out", str(tmp_path / "rep")]) in (0, 2)
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err and "timeline" in out.out
