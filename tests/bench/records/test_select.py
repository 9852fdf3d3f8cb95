"""bench/records/select.py: which commit a comparison covers, and what is not reported yet."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.errors import AtlasError
from bench.records.read import RunData
from bench.records.select import choose_commit, commit_runs, unreported_commits


def run(run_id: str, sha: str | None, start: float) -> RunData:
    meta = {"start_time": start, **({"git": {"sha": sha}} if sha else {})}
    return RunData(run_id=run_id, env="e", path=Path(run_id), meta=meta)


def test_newest_commit_by_default_a_prefix_when_asked():
    runs = [run("a", "a" * 40, 1.0), run("b", "b" * 40, 2.0), run("n", None, 3.0)]
    assert choose_commit(runs, None) == "b" * 40
    sha, chosen = commit_runs(runs, "aaaa")
    assert sha == "a" * 40 and [r.run_id for r in chosen] == ["a", "n"]  # runs without a sha are kept
    with pytest.raises(AtlasError, match=r"no runs of commit 'cccc' .*aaaaaaaaaaaa, bbbbbbbbbbbb"):
        choose_commit(runs, "cccc")


def test_unreported_commits():
    finished = [("r1", "x"), ("r2", "x"), ("r3", "y")]
    assert unreported_commits(finished, "e", {("e", "r1"), ("e", "r3")}) == {"x"}
    assert unreported_commits(finished, "e", {("e", "r1"), ("e", "r2"), ("e", "r3")}) == set()
