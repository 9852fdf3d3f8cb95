"""`bench archive` carries each environment's noise.json to the results branch
(noise/<env>.json), and what reads the branch back (the report's kept_history) finds it;
a collector whose floor counted fewer runs never replaces the branch's, a damaged file is
never carried. Real repositories in tmp folders, synthetic records, `bench noise`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.analysis.noise_store import floors_of, noise_path, read
from bench.analysis.run_index import index_entries
from bench.cli import main
from bench.commands.report import kept_history
from bench.gitops.results_branch import archive
from tests.bench.commands.test_noise import COMMITS, history
from tests.bench.gitops.test_results_branch import clone_of_bare
from tests.gitrepo import git


def test_the_noise_floor_travels_with_the_records_and_is_read_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bare, work = clone_of_bare(tmp_path)
    results = tmp_path / "results"
    history(results, commits=COMMITS[:2], per=2)  # local: 2 commits x 2 runs
    assert main(["noise", "--env", "local", "--results", str(results)]) == 0
    capsys.readouterr()
    raw = noise_path(results, "local").read_bytes()

    res = archive(work, results)
    assert res.status == "pushed" and len(res.added) == 4 and res.noise == ("local",)
    assert git(bare, "show", "results:noise/local.json").encode() == raw
    assert "noise floor of local" in git(bare, "log", "-1", "--format=%s", "results")
    assert archive(work, results).status == "nothing"  # held as it is: no new commit

    # another collector whose floor counted fewer runs (3 of one commit): its runs land, its floor does not
    _, other = clone_of_bare(tmp_path, "other")
    fewer = tmp_path / "fewer"
    history(fewer, commits=[COMMITS[2]], per=3, start=50)
    assert main(["noise", "--env", "local", "--results", str(fewer)]) == 0
    capsys.readouterr()
    res = archive(other, fewer)
    assert len(res.added) == 3 and res.noise == ()
    assert any("the branch's noise floor of local counts more runs; the branch's is kept" in s for s in res.skipped)
    assert git(bare, "show", "results:noise/local.json").encode() == raw
    # a damaged one is named and never carried
    noise_path(fewer, "local").write_text("{")
    history(fewer, commits=[COMMITS[2]], per=1, start=60)  # one more run to archive
    res = archive(other, fewer)
    assert res.noise == () and any(
        "noise.json is damaged (" in s and "bench noise --env local" in s for s in res.skipped
    )

    # reading the branch back: a CI clone whose results folder has the environment but no floor
    _, ci = clone_of_bare(tmp_path, "ci")
    git(ci, "fetch", "--quiet", "origin", "results:results")
    ci_results = ci / "results"
    history(ci_results, commits=[COMMITS[0]], per=1, start=90)
    monkeypatch.chdir(ci)
    entries = kept_history(ci_results, restore_empty=False)
    assert entries is not None and len(entries) == 8
    assert f"restored {noise_path(ci_results, 'local')} from refs/heads/results" in capsys.readouterr().out
    assert noise_path(ci_results, "local").read_bytes() == raw
    stored, problem = read(ci_results, "local")
    assert stored is not None and problem == ""
    # the folder's own run alone: the floor is the branch's file
    found = floors_of(ci_results, "local", "smoke", index_entries(ci_results, "local"), ["images_per_s"])
    block = json.loads(raw)["experiments"]["smoke"]["metrics"]["images_per_s"]
    assert found.source.startswith(str(noise_path(ci_results, "local"))) and found.problem == ""
    assert found.floors["images_per_s"].cv == block["cv"]
    # with the branch's history (which now holds the other collector's repeated runs): stale, named, recomputed
    found = floors_of(ci_results, "local", "smoke", entries, ["images_per_s"])
    assert "noise.json is stale (made from 4 runs of 2 commit(s); the history now has 8 runs of 3)" in found.problem
    assert found.floors["images_per_s"].runs == 8
