"""A clone without the results branch: `bench history` names the step that works there, and
the demo's runs land on a local `results` branch that history and the report then read.
Real git repositories in tmp_path; records made by the project's own synthetic writer."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from bench.cli import main
from bench.commands.report import write_report
from bench.gitops.results_branch import archive
from bench.gitops.results_local import keep_locally
from tests.gitrepo import ENV, git
from tests.synthetic_records import RunSpec, write_run

SHA_A, SHA_B = "a" * 40, "b" * 40


def origin_and_seed(tmp_path: Path) -> tuple[Path, Path]:
    """A bare origin with one commit on main (no results branch), and the clone that made it."""
    bare, seed = tmp_path / "origin.git", tmp_path / "seed"
    git(tmp_path, "init", "--quiet", "--bare", "-b", "main", str(bare))
    git(tmp_path, "clone", "--quiet", str(bare), str(seed))
    (seed / "code.py").write_text("print('v1')\n")
    git(seed, "add", "code.py")
    git(seed, "commit", "--quiet", "-m", "code")
    git(seed, "push", "--quiet", "origin", "HEAD:main")
    return bare, seed


def runs(results: Path, sha: str, *ids: str, day: int = 0) -> None:
    for k, run_id in enumerate(ids):
        write_run(results, RunSpec("local", run_id, sha=sha, start=1_790_000_000 + day * 86400 + k * 60, seed=k))


def history(repo: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["history", "--repo-dir", str(repo)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_history_on_a_fresh_clone_names_the_step_that_works(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    bare, seed = origin_and_seed(tmp_path)

    # origin has no results branch either: fetching cannot work, archiving can
    fresh = tmp_path / "fresh"
    git(tmp_path, "clone", "--quiet", str(bare), str(fresh))
    code, _, err = history(fresh, capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert "no results branch in this clone or on origin" in err and "`bench archive --local`" in err
    assert "git fetch" not in err

    # no remote at all
    alone = tmp_path / "alone"
    git(tmp_path, "init", "--quiet", "-b", "main", str(alone))
    code, _, err = history(alone, capsys)
    assert code == 2 and "no remote 'origin' to fetch one from" in err and "git fetch" not in err

    # origin has one, a single-branch clone does not: the fetch it names is the one that works
    runs(seed / "results", SHA_A, "r0", "r1")
    assert archive(seed, seed / "results").status == "pushed"
    single = tmp_path / "single"
    git(tmp_path, "clone", "--quiet", "--single-branch", "-b", "main", str(bare), str(single))
    code, _, err = history(single, capsys)
    assert code == 2 and "but origin has one" in err, err
    step = re.search(r"`(git fetch [^`]+)`", err)
    assert step and step.group(1) == "git fetch origin results:results"
    subprocess.run(step.group(1).split(), cwd=single, env=ENV, check=True, capture_output=True)
    code, out, err = history(single, capsys)
    assert code == 0 and "history: 2 run(s), 1 commit(s)" in out and "refs/heads/results" in out, err


def test_the_demos_runs_stay_on_a_local_branch_that_history_and_the_chart_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    bare, seed = origin_and_seed(tmp_path)
    runs(seed / "results", SHA_A, "o0")  # origin already keeps one run
    assert archive(seed, seed / "results").status == "pushed"
    work = tmp_path / "work"
    git(tmp_path, "clone", "--quiet", str(bare), str(work))  # origin/results, no local branch

    results = work / "results"
    runs(results, SHA_A, "d0", "d1")
    kept = keep_locally(results)
    assert kept.line.startswith("kept 2 run(s) on the local results branch"), kept.line
    assert sorted(e["run_id"] for e in kept.entries) == ["d0", "d1", "o0"]  # started from origin's tip
    assert git(work, "rev-parse", "results~1").strip() == git(work, "rev-parse", "origin/results").strip()
    assert git(work, "status", "--porcelain", "--untracked-files=no").strip() == ""  # the work tree and index untouched

    # the next demo, at a later commit, in a results folder without the first runs
    shutil.rmtree(results)
    runs(results, SHA_B, "d2", "d3", day=1)
    kept = keep_locally(results)
    assert len(kept.entries) == 5
    assert keep_locally(results).line == f"the local results branch already holds every run of {results}"

    code, out, err = history(work, capsys)
    assert code == 0 and "history: 5 run(s), 2 commit(s)" in out and "from refs/heads/results" in out, err

    readme = write_report(results, tmp_path / "reports", history=kept.entries).readme
    assert (readme.parent / "history.png").is_file()
    text = readme.read_text()
    note = text.split("](history.png)", 1)[1].split("\n\n", 2)[1]
    assert note.startswith("Median images/s of each commit's runs, per environment: 2 commit(s)"), note
    assert "from the results folder and the results branch" in note

    # a folder outside any repository keeps nothing, and the demo still reports
    outside = keep_locally(tmp_path / "elsewhere")
    assert outside.entries is None and "is not inside a git repository" in outside.line
