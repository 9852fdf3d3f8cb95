"""`bench explain` and `bench history`'s explanations through the CLI, on synthetic records of
two real commits of a real git repository (the files changed come from its `git diff`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.explain_cases import CASES, Case, write_group
from tests.gitrepo import ENV, git

SLOWER_BLOCK = next(c for c in CASES if c.name == "slower G block")


def bench(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bench", *args], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=300
    )


def commit(work: Path, path: str, text: str) -> str:
    (work / path).parent.mkdir(parents=True, exist_ok=True)
    (work / path).write_text(text)
    git(work, "add", path)
    git(work, "commit", "--quiet", "-m", f"change {path}")
    return git(work, "rev-parse", "HEAD").strip()


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A clone with two commits (the second slows G.blocks.3 in layers.py) and 5 runs of each."""
    work = tmp_path_factory.mktemp("explain") / "repo"
    work.mkdir()
    git(work, "init", "--quiet", "-b", "main")
    base = commit(work, "workflows/biggan/layers.py", "fast = True\n")
    head = commit(work, "workflows/biggan/layers.py", "fast = False\n")
    write_group(work / "results", SLOWER_BLOCK, "base", 1, sha=base)
    write_group(work / "results", SLOWER_BLOCK, "head", 2, sha=head)
    return work, base, head


@pytest.mark.slow
def test_explain_names_the_phase_the_block_and_the_changed_file(repo: tuple[Path, str, str]):
    work, base, head = repo
    p = bench(work, "explain", "--env", "moc", base[:8], head[:8])
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == f"# moc: {head[:12]} (5 run(s)) against {base[:12]} (5 run(s))"
    said = lines[2]
    assert said.startswith("train phase +") and "in `G.blocks.3` (forward" in said
    assert said.endswith("config unchanged; same platform; code changed: workflows/biggan/layers.py.")
    assert "| train |" in p.stdout and "| `G.blocks.3` (forward) |" in p.stdout

    found = json.loads(bench(work, "explain", "--env", "moc", base, head, "--json").stdout)
    assert found["phase"] == "train" and found["module"] == "G.blocks.3"
    assert found["files"] == ["workflows/biggan/layers.py"] and found["causes"][0]["kind"] == "code"
    assert found["sentence"] == said


def test_commits_outside_the_repository_are_said_plainly(repo: tuple[Path, str, str], tmp_path: Path):
    work, base, head = repo
    p = bench(work, "explain", "--env", "moc", base, head, "--repo-dir", str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert "code changed:" not in p.stdout and "(files unknown: no git repository here" in p.stdout


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ("--env", "moc", "deadbeef", "HEAD"),
            "no finished runs of commit 'deadbeef' (base) on moc; commits with runs:",
        ),
        (("--env", "aws", "a", "b"), "no runs of environment 'aws' under results"),
    ],
)
def test_bad_input_is_one_line(repo: tuple[Path, str, str], args: tuple[str, ...], says: str):
    work, _, _ = repo
    p = bench(work, "explain", *args)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and says in p.stderr, p.stderr


def test_a_commit_whose_runs_all_failed_is_an_empty_group(tmp_path: Path):
    write_group(tmp_path / "results", Case("ok", None, None), "base", 1, sha="a" * 40)
    failed = write_group(tmp_path / "results", Case("ok", None, None), "head", 2, sha="f" * 40, runs=2)
    for run_dir in failed:
        meta = json.loads((run_dir / "run.json").read_text())
        meta["exit"] = {"status": "failed", "code": 1, "signal": None}
        (run_dir / "run.json").write_text(json.dumps(meta))
    p = bench(tmp_path, "explain", "--env", "moc", "aaaa", "ffff")
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert "no finished runs of commit 'ffff' (head) on moc; commits with runs: aaaaaaaaaaaa" in p.stderr


def test_history_explains_each_change_point_with_the_same_sentence(tmp_path: Path):
    """Four commits, two runs each; the last two slow G.blocks.3: the change point's
    explanation reads the profiles of the results folder and names the block."""
    work = tmp_path / "repo"
    work.mkdir()
    git(work, "init", "--quiet", "-b", "main")
    shas = [commit(work, "workflows/biggan/layers.py", f"version = {i}\n") for i in range(4)]
    for i, sha in enumerate(shas):
        side = "head" if i >= 2 else "base"
        write_group(work / "results", SLOWER_BLOCK, side, 10 + i, sha=sha, runs=3, slot=10 * i)
    p = bench(work, "history", "--results", "results", "--metric", "time_to_train_s", "--json")
    assert p.returncode == 0, p.stderr
    (cp,) = [json.loads(line) for line in p.stdout.splitlines()]
    assert cp["commit"] == shas[2] and cp["start"] == 0 and cp["end"] == 4
    said = cp["explanation"]
    assert said.startswith("train phase +") and "`G.blocks.3`" in said
    assert said.endswith("code changed: workflows/biggan/layers.py.")


def test_the_pr_comment_names_the_slower_block(repo: tuple[Path, str, str], tmp_path: Path):
    work, base, head = repo
    out = tmp_path / "comment.md"
    p = bench(work, "comment", "--pr", "1", "--results", "results", "--head", head, "--base", base,
              "--no-post", "--out", str(out))  # fmt: skip
    assert p.returncode == 0, p.stderr
    (line,) = [x for x in out.read_text().splitlines() if x.startswith("**Explained**")]
    assert line.startswith("**Explained** (`bench explain`): train phase +") and "`G.blocks.3` (forward" in line
    assert line.endswith("code changed: workflows/biggan/layers.py.")
