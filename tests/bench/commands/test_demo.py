"""`bench demo` end to end: the real smoke workload on the local env, compare, report."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.analysis.run_index import INDEX_FILE
from bench.cli import main

pytestmark = pytest.mark.slow


def test_demo_runs_records_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clusters = tmp_path / "clusters"
    (clusters / "here").mkdir(parents=True)
    (clusters / "here" / "env.yaml").write_text(
        f"kind: local\nlocal: true\nruns_dir: {tmp_path / 'runs'}\n"
        "cost: {model: onprem, electricity_usd_per_kwh: 0.0839, pue: 1.2, node_capex_usd: 3000}\n"
    )
    (clusters / "far").mkdir()
    (clusters / "far" / "env.yaml").write_text("kind: local\n")  # not local: true -> not run
    (clusters / "broken").mkdir()
    (clusters / "broken" / "env.yaml").write_text("kind: nosuchkind\nlocal: true\n")
    code = main(
        [
            "demo",
            "--runs",
            "2",
            "--clusters",
            str(clusters),
            "--results",
            str(tmp_path / "results"),
            "--out",
            str(tmp_path / "reports"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "skip broken: unknown target kind 'nosuchkind'" in out
    assert "far" not in out.replace("far/", "")
    # results outside any git repository: nothing kept on a results branch, and the demo says so
    assert f"runs not kept on a results branch: {tmp_path / 'results'} is not inside a git repository" in out
    report = next((tmp_path / "reports").glob("*/README.md"))
    assert f"report: {report}" in out
    text = report.read_text()
    assert "2 of 2 run(s) compared, on 1 environment(s): here" in text
    assert "| here | " in text and "success" in text
    assert (report.parent / "images_per_s.png").is_file() and (report.parent / "cpu.png").is_file()
    assert "no GPU samples" in text
    assert (tmp_path / "reports" / "README.md").read_text().count(report.parent.name) >= 1
    assert len([p for p in (tmp_path / "results" / "here").iterdir() if p.name != INDEX_FILE]) == 2


def test_demo_with_nothing_available_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clusters = tmp_path / "clusters"
    (clusters / "x").mkdir(parents=True)
    (clusters / "x" / "env.yaml").write_text("kind: local\n")
    assert (
        main(["demo", "--clusters", str(clusters), "--results", str(tmp_path / "r"), "--out", str(tmp_path / "o")]) == 2
    )
    assert "no local environment is available" in capsys.readouterr().err
