"""bench/render/tables.py: every row and column comes from the metric catalogue."""

from __future__ import annotations

from pathlib import Path

from bench.analysis.compare import compare_runs
from bench.analysis.metrics import METRICS
from bench.records.read import find_runs
from bench.render.tables import pairs_table, runs_table, summary_table, verdicts
from tests.synthetic_records import RunSpec, write_run


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
    # 4 vs 4 (smallest p 0.029) can judge one metric, but not one of several after Benjamini–Hochberg
    (line,) = [v for v in verdicts(result(tmp_path / "four", runs=4)) if v.startswith("images/s")]
    assert "Mann–Whitney p = 0.029, BH-adjusted p = 0.071 over 5 metrics" in line
    assert "not a clear difference (needs BH-adjusted p ≤ 0.05 and an interval excluding 1)" in line
    (line,) = [v for v in verdicts(result(tmp_path / "six", runs=6)) if v.startswith("images/s")]
    assert "Mann–Whitney p = 0.0022, BH-adjusted p = " in line
    assert "b wins (BH-adjusted p ≤ 0.05 and the interval excludes 1)" in line
