"""`bench report --each-commit`: one report per commit in the results tree."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.mark.slow
def test_report_commits_writes_one_report_per_commit(tmp_path: Path):
    from bench.commands.report import report_each_commit as report_commits
    from bench.render.index import reported_runs
    from tests.synthetic_records import RunSpec, write_run

    for i, sha in enumerate(["a" * 40, "b" * 40]):
        write_run(tmp_path / "results", RunSpec(env="local", run_id=f"r{i}", sha=sha, start=1_790_000_000 + i * 86400))
    written = report_commits(tmp_path / "results", tmp_path / "reports")
    assert len(written) == 2 and all(p.is_file() for p in written)
    assert reported_runs(tmp_path / "reports") == {("local", "r0"), ("local", "r1")}
    assert report_commits(tmp_path / "empty", tmp_path / "reports") == []
