"""bench/render/tables.py: every row and column comes from the metric catalogue."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.analysis.compare import compare_runs
from bench.analysis.metrics import METRICS, fmt
from bench.records.read import find_runs
from bench.records.synthetic import RunSpec, write_run
from bench.render.tables import end_to_end_lines, pairs_table, runs_table, summary_table, verdicts


def result(tmp_path: Path, runs: int = 3):
    for env, ips in (("a", 100.0), ("b", 130.0)):
        for i in range(runs):
            write_run(tmp_path, RunSpec(env=env, run_id=f"{env}{i}", images_per_s=ips, seed=i))
    return compare_runs(find_runs(tmp_path))


def test_tables_follow_the_catalogue(tmp_path: Path):
    res = result(tmp_path)
    summary = summary_table(res)
    assert all(f"| {m.label} | {m.unit} |" in summary for m in METRICS if m.in_summary)
    assert "| images seen |" not in summary  # a fact, not a summary row
    header = runs_table(res).splitlines()[0]
    assert header == "| env | run | status | " + " | ".join(m.label for m in METRICS if m.in_runs_table) + " |"
    assert "| images/s, whole job (steady, median) | b | a |" in pairs_table(res)


def test_verdicts_name_the_winner_with_the_numbers(tmp_path: Path):
    (line,) = [v for v in verdicts(result(tmp_path)) if v.startswith("images/s")]
    assert line.startswith("images/s, whole job (steady, median): b vs a: 3") and "% faster (ratio 1.3" in line
    assert "Mann–Whitney p = 0.10" in line and "wins" not in line
    assert "not enough runs to judge (n = 3 vs 3; the smallest possible p is 0.10, a difference needs p ≤ 0.05)" in line
    (line,) = [v for v in verdicts(result(tmp_path / "four", runs=4)) if v.startswith("images/s")]
    assert "b wins (p ≤ 0.05 and the interval excludes 1)" in line and "Mann–Whitney p = 0.029" in line


def test_the_summary_opens_with_the_whole_trip_and_the_phase_that_differs_most(tmp_path: Path):
    for env, queue in (("a", 0.0), ("b", 30.0)):
        for i in range(4):
            write_run(tmp_path, RunSpec(env=env, run_id=f"{env}{i}", queue_wait_s=queue, seed=i, timeline=True))
    res = compare_runs(find_runs(tmp_path))
    (line,) = end_to_end_lines(res)
    a, b = res.summaries["a"].median["submit_to_result_s"], res.summaries["b"].median["submit_to_result_s"]
    assert b - a == pytest.approx(30.0, abs=0.01)
    assert line.startswith(f"End to end: b takes {fmt(b)} s from submit to result, a {fmt(a)} s ({fmt(b / a)}×")
    assert line.endswith("b spends 30.0 s more in queue.")
    # the differences follow, largest and clearest first: the whole trip leads, images/s (equal) trails
    lines = verdicts(res)
    assert lines[0].startswith("platform overhead: b vs a: 182 % longer") and "a wins" in lines[0]
    assert lines[1].startswith("submit to result: b vs a") and "a wins" in lines[1]
    assert [x.split(":")[0] for x in lines].index("images/s, whole job (steady, median)") > 0
