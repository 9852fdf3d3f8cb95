"""bench/render/index.py: the index of reports, and which runs the reports already cover."""

from __future__ import annotations

import json
from pathlib import Path

from bench.render.index import SUMMARY_JSON, reported_runs, write_index


def test_index_lists_report_folders_newest_first_and_names_broken_ones(tmp_path: Path):
    for name, ips in (("2026-01-01-aaaaaaa", 10.0), ("2026-02-01-bbbbbbb", 12.5)):
        (tmp_path / name).mkdir()
        summary = {"commit": name[-7:] * 2, "envs": ["local"], "runs": 3, "images_per_s": {"local": ips}}
        (tmp_path / name / SUMMARY_JSON).write_text(json.dumps(summary))
    (tmp_path / "2026-03-01-broken").mkdir()
    (tmp_path / "2026-03-01-broken" / SUMMARY_JSON).write_text("{not json")
    text = write_index(tmp_path).read_text()
    assert text.index("2026-02-01-bbbbbbb") < text.index("2026-01-01-aaaaaaa")
    (broken,) = [line for line in text.splitlines() if "2026-03-01-broken" in line]
    assert "summary.json unreadable" in broken  # listed with the fix, never silently dropped


def test_reported_runs_reads_each_reports_runs_csv(tmp_path: Path):
    (tmp_path / "r1").mkdir()
    (tmp_path / "r1" / "runs.csv").write_text("env,run_id,images_per_s\nlocal,x1,3\nmoc,y1,4\n")
    (tmp_path / "r2").mkdir()
    (tmp_path / "r2" / "runs.csv").write_text("env,run_id\n,missing\n")
    assert reported_runs(tmp_path) == {("local", "x1"), ("moc", "y1")}
    assert reported_runs(tmp_path / "none") == set()
