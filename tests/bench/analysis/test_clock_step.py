"""A run whose job clock stepped is left out of comparisons and listed under excluded runs
with the reason (records written in the real on-disk format, then one clock made to step)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.analysis.compare import compare_runs
from bench.cli import main
from bench.records.read import find_runs
from tests.synthetic_records import RunSpec, write_run


def three_runs(tmp_path: Path) -> Path:
    for i in range(3):
        write_run(tmp_path, RunSpec("a", f"a{i}", seed=i, start=1.79e9 + i * 1000))
        write_run(tmp_path, RunSpec("b", f"b{i}", seed=10 + i, start=1.79e9 + i * 1000 + 10, images_per_s=50.0))
    return tmp_path


def step_train_clock(run_dir: Path) -> None:
    """One train line's time stepped back by a minute (NTP stepping the job's clock)."""
    path = run_dir / "train.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    trains = [i for i, e in enumerate(lines) if e["event"] == "train"]
    lines[trains[len(trains) // 2]]["time"] -= 60.0
    path.write_text("".join(json.dumps(e) + "\n" for e in lines))


def step_samples_clock(run_dir: Path) -> None:
    """One samples row's time stepped back by a minute."""
    [path] = run_dir.glob("samples-*.csv")
    rows = path.read_text().splitlines()
    header = rows[0].split(",")
    col = header.index("time")
    cells = rows[len(rows) // 2].split(",")
    cells[col] = repr(float(cells[col]) - 60.0)
    rows[len(rows) // 2] = ",".join(cells)
    path.write_text("\n".join(rows) + "\n")


def test_a_run_whose_train_clock_stepped_is_excluded_with_the_reason(tmp_path: Path) -> None:
    root = three_runs(tmp_path)
    step_train_clock(root / "a" / "a1")
    result = compare_runs(find_runs(root))
    reasons = {e.run_id: e.reason for e in result.excluded}
    assert list(reasons) == ["a1"]
    assert reasons["a1"].startswith("the job's clock stepped: train.jsonl: 1 event(s) earlier than a line before")
    assert result.summaries["a"].runs == 2 and result.summaries["b"].runs == 3


def test_a_run_whose_samples_clock_stepped_is_excluded_with_the_reason(tmp_path: Path) -> None:
    root = three_runs(tmp_path)
    step_samples_clock(root / "b" / "b2")
    result = compare_runs(find_runs(root))
    reasons = {e.run_id: e.reason for e in result.excluded}
    assert list(reasons) == ["b2"]
    assert reasons["b2"].startswith("the job's clock stepped: samples-") and "goes backwards" in reasons["b2"]
    assert result.summaries["b"].runs == 2


def test_the_report_lists_the_stepped_run_under_excluded_runs(tmp_path: Path) -> None:
    root = three_runs(tmp_path / "results")
    step_train_clock(root / "a" / "a0")
    out = tmp_path / "report"
    assert main(["report", "--results", str(root), "--out", str(out)]) == 0
    [page] = [p.read_text() for p in out.glob("*/README.md")]
    excluded = page[page.index("xcluded") :]
    assert "a0" in excluded and "the job's clock stepped" in excluded
    [table] = list(out.glob("*/excluded.csv"))
    assert "a0" in table.read_text() and "clock stepped" in table.read_text()
