"""The results branch: raw records kept in git, on real repositories in tmp folders."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from bench.errors import AtlasError, ConfigError
from bench.gitops import results_branch
from bench.gitops.publish import BOT_NAME
from bench.gitops.results_branch import archive, read_entries, restore
from tests.gitrepo import ENV, git
from tests.synthetic_records import RunSpec, write_run


def clone_of_bare(tmp_path: Path, name: str = "dev") -> tuple[Path, Path]:
    bare = tmp_path / "origin.git"
    if not bare.exists():
        git(tmp_path, "init", "--quiet", "--bare", "-b", "main", str(bare))
        seed = tmp_path / "seed"
        git(tmp_path, "clone", "--quiet", str(bare), str(seed))
        (seed / "code.py").write_text("print('v1')\n")
        git(seed, "add", "code.py")
        git(seed, "commit", "--quiet", "-m", "code")
        git(seed, "push", "--quiet", "origin", "HEAD:main")
    work = tmp_path / name
    git(tmp_path, "clone", "--quiet", str(bare), str(work))
    return bare, work


def run(results: Path, run_id: str, sha: str = "1" * 40, gpus: int = 1) -> Path:
    return write_run(results, RunSpec(env="moc", run_id=run_id, sha=sha, gpus=gpus, duration_s=120))


def test_archive_keeps_each_record_and_never_touches_the_work_tree(tmp_path: Path):
    bare, work = clone_of_bare(tmp_path)
    (work / "code.py").write_text("print('edited, not committed')\n")
    (work / "new.txt").write_text("staged\n")
    git(work, "add", "new.txt")
    before = (git(work, "status", "--porcelain"), git(work, "rev-parse", "HEAD"), git(work, "diff", "--cached"))
    results = tmp_path / "results"
    first = run(results, "r1")

    res = archive(work, results)
    assert res.status == "pushed" and res.added == ("moc/r1",)
    assert (git(work, "status", "--porcelain"), git(work, "rev-parse", "HEAD"), git(work, "diff", "--cached")) == before
    assert git(work, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    files = git(bare, "ls-tree", "-r", "--name-only", "results").split()
    assert "index/moc/r1.json" in files and "runs/moc/r1/run.json" in files
    assert "runs/moc/r1/samples-node1.csv.cols.xz" in files
    author, subject = git(bare, "log", "-1", "--format=%an|%s", "results").strip().split("|")
    assert author == BOT_NAME and subject.endswith("[skip ci]")
    entry = json.loads(git(bare, "show", "results:index/moc/r1.json"))
    raw = (first / "samples-node1.csv").read_bytes()
    assert entry["files"]["samples-node1.csv"]["sha256"] == hashlib.sha256(raw).hexdigest()
    assert entry["metrics"]["images_per_s"] > 0 and entry["provenance"]["driver"] == "535.00"

    # a second collect adds one commit on top; what was kept is never rewritten
    assert archive(work, results).status == "nothing"
    run(results, "r2")
    tip = git(bare, "rev-parse", "results").strip()
    res2 = archive(work, results)
    assert res2.added == ("moc/r2",)
    assert git(bare, "rev-parse", "results^").strip() == tip
    assert git(bare, "rev-parse", f"{tip}:runs/moc/r1") == git(bare, "rev-parse", "results:runs/moc/r1")


def test_a_branch_that_moved_meanwhile_is_rebuilt_on_and_both_runs_land(tmp_path: Path, monkeypatch):
    bare, mine = clone_of_bare(tmp_path, "mine")
    _, theirs = clone_of_bare(tmp_path, "theirs")
    run(tmp_path / "ours", "ours-1")
    run(tmp_path / "other", "other-1")
    archive(theirs, tmp_path / "other")  # the branch exists
    real_fetch, calls = results_branch.fetch, []

    def fetch_then_lose_the_race(*args, **kwargs):
        tip = real_fetch(*args, **kwargs)
        calls.append(tip)
        if len(calls) == 1:  # another collector pushes between our fetch and our push
            run(tmp_path / "other", "other-2")
            archive(theirs, tmp_path / "other")
        return tip

    monkeypatch.setattr(results_branch, "fetch", fetch_then_lose_the_race)
    res = archive(mine, tmp_path / "ours", pause_s=0.01)
    assert res.status == "pushed" and res.rebases == 1 and res.attempts == 2
    held = {e["run_id"] for e in read_entries(bare, "results")}
    assert held == {"ours-1", "other-1", "other-2"}
    assert int(git(bare, "rev-list", "--count", "results")) == 3  # one commit per collect, none forced


def test_restore_gives_back_the_exact_files_from_a_shallow_clone(tmp_path: Path):
    bare, work = clone_of_bare(tmp_path)
    results = tmp_path / "results"
    kept = run(results, "r1", gpus=2)
    archive(work, results)
    run(results, "r2")
    archive(work, results)
    shallow = tmp_path / "ci"
    git(tmp_path, "clone", "--quiet", "--depth=1", "--branch", "main", f"file://{bare}", str(shallow))
    assert results_branch.fetch(shallow, "origin", depth=1)
    assert git(shallow, "rev-list", "--count", "origin/results").strip() == "1"  # only the tip
    again = tmp_path / "again"
    assert sorted(restore(shallow, "origin/results", again)) == ["moc/r1", "moc/r2"]
    for f in kept.iterdir():
        assert (again / "moc" / "r1" / f.name).read_bytes() == f.read_bytes(), f.name
    assert restore(shallow, "origin/results", again) == []  # present runs are left alone


def test_bad_places_are_one_clear_error(tmp_path: Path):
    with pytest.raises(ConfigError, match="not inside a git repository"):
        archive(tmp_path, tmp_path)
    _, work = clone_of_bare(tmp_path)
    with pytest.raises(ConfigError, match="remote 'nowhere' does not exist"):
        archive(work, tmp_path, remote="nowhere")
    with pytest.raises(ConfigError, match="no results folder"):
        archive(work, tmp_path / "missing")


def test_a_tampered_record_is_refused_and_nothing_half_written_is_left(tmp_path: Path):
    bare, work = clone_of_bare(tmp_path)
    results = tmp_path / "results"
    run(results, "r1")
    archive(work, results, remote=None)
    # rewrite the kept run.json in a new commit, as a careless hand edit of the branch would
    entry = json.loads(git(work, "show", "results:index/moc/r1.json"))
    assert entry["files"]["run.json"]["stored"] == "run.json"
    blob = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"], cwd=work, input=b"{}", capture_output=True, check=True
    ).stdout.decode()
    index = tmp_path / "tmp-index"
    env = {**ENV, "GIT_INDEX_FILE": str(index)}
    subprocess.run(["git", "read-tree", "results"], cwd=work, env=env, check=True)
    info = f"100644 {blob.strip()}\truns/moc/r1/run.json\n"
    subprocess.run(["git", "update-index", "--index-info"], cwd=work, env=env, input=info.encode(), check=True)
    tree = subprocess.run(["git", "write-tree"], cwd=work, env=env, capture_output=True, check=True).stdout.decode()
    commit = git(work, "commit-tree", tree.strip(), "-p", "results", "-m", "edit").strip()
    git(work, "update-ref", "refs/heads/results", commit)
    again = tmp_path / "again"
    with pytest.raises(Exception, match="does not match its sha256"):
        restore(work, "refs/heads/results", again)
    assert not any(p.name.startswith(".") for p in (again / "moc").iterdir())  # no temporary left
    assert not (again / "moc" / "r1").exists()


def test_archive_command_with_nothing_collected_says_so(tmp_path: Path):
    import sys

    _, work = clone_of_bare(tmp_path)
    p = subprocess.run(
        [sys.executable, "-m", "bench", "archive", "--results", str(tmp_path / "none")],
        cwd=work,
        env=ENV,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0 and "nothing to keep" in p.stdout, p.stderr


def test_a_local_archive_then_a_pushed_one_keeps_every_run(tmp_path: Path):
    """`--local` commits stay on the branch when a push-mode archive follows: they are
    rebuilt onto origin's tip and pushed with it (the branch moved to origin's tip and lost them)."""
    bare, work = clone_of_bare(tmp_path)
    _, theirs = clone_of_bare(tmp_path, "theirs")
    run(tmp_path / "shared", "pushed-1")
    archive(theirs, tmp_path / "shared")  # origin has a results branch this clone never fetched
    run(tmp_path / "mine", "local-1")
    run(tmp_path / "mine", "local-2")
    assert archive(work, tmp_path / "mine", remote=None).status == "committed"
    run(tmp_path / "next", "pushed-2")
    res = archive(work, tmp_path / "next")
    assert res.status == "pushed" and set(res.added) == {"moc/pushed-2", "moc/local-1", "moc/local-2"}
    every = {"pushed-1", "pushed-2", "local-1", "local-2"}
    assert {e["run_id"] for e in read_entries(work, "refs/heads/results")} == every
    assert {e["run_id"] for e in read_entries(bare, "results")} == every
    assert git(work, "rev-parse", "refs/heads/results") == git(bare, "rev-parse", "results")


def test_a_rewritten_or_foreign_tip_is_refused_naming_the_commit_that_has_the_runs(tmp_path: Path):
    bare, work = clone_of_bare(tmp_path)
    run(tmp_path / "a", "r1")
    run(tmp_path / "b", "r2")
    archive(work, tmp_path / "a")
    kept = archive(work, tmp_path / "b").commit
    # someone force-pushes the branch back to its first commit: r2 is gone from origin
    git(bare, "update-ref", "refs/heads/results", git(bare, "rev-parse", "results^").strip())
    run(tmp_path / "c", "r3")
    with pytest.raises(AtlasError, match=rf"lost 1 run\(s\) .*moc/r2.*commit {kept[:12]} still has them") as err:
        archive(work, tmp_path / "c")
    assert "\n" not in str(err.value) and kept in str(err.value)
    assert {e["run_id"] for e in read_entries(bare, "results")} == {"r1"}  # nothing was written
    # a branch that is not a results commit (the source tree pushed there) is refused too
    git(bare, "update-ref", "refs/heads/results", git(bare, "rev-parse", "main").strip())
    _, fresh = clone_of_bare(tmp_path, "fresh")
    foreign = r"origin/results \([0-9a-f]{12}\) is not a results commit \(it holds code.py\)"
    with pytest.raises(AtlasError, match=foreign):
        archive(fresh, tmp_path / "c")
    assert git(bare, "rev-parse", "results") == git(bare, "rev-parse", "main")


def test_two_local_archives_at_once_both_land(tmp_path: Path, monkeypatch):
    _, work = clone_of_bare(tmp_path)
    run(tmp_path / "one", "one-1")
    run(tmp_path / "two", "two-1")
    real_commit, calls = results_branch._commit, []

    def commit_then_lose_the_race(*args, **kwargs):
        calls.append(1)
        made = real_commit(*args, **kwargs)
        if len(calls) == 1:  # the other `--local` archive moves the branch between our commit and update-ref
            archive(work, tmp_path / "two", remote=None)
        return made

    monkeypatch.setattr(results_branch, "_commit", commit_then_lose_the_race)
    res = archive(work, tmp_path / "one", remote=None, pause_s=0.01)
    assert res.status == "committed" and res.rebases == 1
    assert {e["run_id"] for e in read_entries(work, "refs/heads/results")} == {"one-1", "two-1"}


def test_archive_on_a_full_disk_exits_74_and_keeps_the_branch(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    from bench.cli import main
    from tests.fullfs import fill, mounted_tmpfs

    with mounted_tmpfs(tmp_path / "fs", "8m") as fs:
        git(tmp_path, "init", "--quiet", "-b", "main", str(fs / "clone"))
        git(fs / "clone", "commit", "--quiet", "--allow-empty", "-m", "code")
        results = run(tmp_path / "results", "r1").parent.parent
        fill(fs, leave=2048)
        code = main(["archive", "--local", "--results", str(results), "--repo-dir", str(fs / "clone")])
        err = capsys.readouterr().err
        assert code == 74 and "disk full" in err and "Traceback" not in err, err
        assert git(fs / "clone", "branch", "--list", "results") == ""  # no half-written branch


def _corrupt(repo: Path, spec: str) -> str:
    """Overwrite the loose object of `spec` (rev:path) with bytes git cannot inflate; its sha."""
    sha = git(repo, "rev-parse", spec).strip()
    obj = repo / ".git" / "objects" / sha[:2] / sha[2:]
    obj.chmod(0o644)
    obj.write_bytes(b"not zlib at all")
    return sha


def test_one_corrupt_object_is_one_missing_entry(tmp_path: Path, monkeypatch, capsys: pytest.CaptureFixture[str]):
    from bench.cli import main

    _, work = clone_of_bare(tmp_path)
    results = tmp_path / "results"
    for run_id in ("r1", "r2", "r3"):
        run(results, run_id)
    archive(work, results, remote=None)
    _corrupt(work, "results:index/moc/r2.json")
    _corrupt(work, "results:runs/moc/r3/run.json")

    skipped: list[str] = []
    assert {e["run_id"] for e in read_entries(work, "refs/heads/results", None, skipped)} == {"r1", "r3"}
    assert len(skipped) == 1 and "index/moc/r2.json is missing or corrupt" in skipped[0]
    skipped = []
    restored = restore(work, "refs/heads/results", tmp_path / "back", skipped=skipped)
    assert restored == ["moc/r1"] and not (tmp_path / "back" / "moc" / "r3").exists()
    assert any("moc/r3/run.json is missing or corrupt" in line for line in skipped), skipped
    assert (tmp_path / "back" / "moc" / "r1" / "run.json").read_bytes() == (
        results / "moc" / "r1" / "run.json"
    ).read_bytes()

    monkeypatch.chdir(work)
    capsys.readouterr()
    assert main(["report", "--results", str(results), "--out", str(tmp_path / "reports")]) == 0
    err = capsys.readouterr().err
    assert "index/moc/r2.json is missing or corrupt" in err and "Traceback" not in err, err
    assert main(["history", "--repo-dir", str(work)]) == 0
    assert "index/moc/r2.json" in capsys.readouterr().err
    assert main(["check", str(results)]) == 1  # the records are sound; the branch's bad entry is listed
    assert "index/moc/r2.json is missing or corrupt" in capsys.readouterr().out
