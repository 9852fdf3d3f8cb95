"""bench/analysis/report_data.py: one ReportData holds what the report shows, and `bench
compare` prints the same Summary lines as the report (both draw one `Headline`)."""

from __future__ import annotations

from pathlib import Path

from bench.analysis.report_data import read_report_data
from bench.cli import main
from bench.commands.report import write_report
from bench.render.escape import md
from bench.render.headline import end_to_end_lines
from tests.synthetic_records import RunSpec, write_run


def _runs(results: Path) -> None:
    for env, queue in (("a", 0.0), ("b", 30.0)):
        for i in range(3):
            write_run(results, RunSpec(env=env, run_id=f"{env}{i}", queue_wait_s=queue, seed=i, timeline=True))


def test_the_report_and_bench_compare_print_the_same_summary(tmp_path: Path, capsys) -> None:
    results = tmp_path / "results"
    _runs(results)
    data = read_report_data(results)
    assert data.result.envs == ["a", "b"] and len(data.chosen) == 6
    assert [g.phase for g in data.headline.gaps["b"]][0] == "queue"  # the phase that differs most, decided here
    (line,) = end_to_end_lines(data.headline)
    assert "b spends 30.0 s more in queue" in line
    # what render/ escapes and joins, analysis/ decided: each env's hosts, once
    assert dict(data.provenance)["hosts"] == [["node1"], ["node1"]]
    assert data.name == f"2026-09-21-{RunSpec.sha[:7]}" and data.summary["runs"] == 6

    assert main(["compare", "--results", str(results)]) == 0
    printed = capsys.readouterr().out
    readme = write_report(results, tmp_path / "reports").readme.read_text()
    assert f"- {line}" in printed
    assert f"- {line}" in readme
    assert f"| hosts | {md('node1')} | {md('node1')} |" in readme
