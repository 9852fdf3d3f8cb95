"""`bench publish` against real git: a local bare repository stands in for GitHub."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.commands.publish import REGENERATE
from bench.errors import AtlasError
from bench.gitops.publish import BOT_NAME, publish
from bench.render.index import SUMMARY_JSON, write_index
from tests.gitrepo import ENV, git

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """A bare repo that refuses non-fast-forward pushes (so a force could not sneak through)."""
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "--quiet", "--bare", "-b", "main", str(bare))
    git(bare, "config", "receive.denyNonFastForwards", "true")
    seed = tmp_path / "seed"
    git(tmp_path, "clone", "--quiet", str(bare), str(seed))
    (seed / "reports").mkdir()
    write_index(seed / "reports")
    (seed / "code.py").write_text("print('hello')\n")
    git(seed, "add", ".")
    git(seed, "commit", "--quiet", "-m", "seed")
    git(seed, "push", "--quiet", "origin", "HEAD:main")
    return bare


def clone_with_report(origin: Path, name: str, commit: str) -> Path:
    """A clone where a report folder was written and the index regenerated, as `bench report` does."""
    work = origin.parent / name
    git(origin.parent, "clone", "--quiet", str(origin), str(work))
    folder = work / "reports" / f"2026-11-22-{commit}"
    folder.mkdir(parents=True)
    (folder / "README.md").write_text(f"# Report for {commit}\n")
    (folder / SUMMARY_JSON).write_text(
        json.dumps(
            {
                "folder": folder.name,
                "commit": commit * 5,
                "envs": ["local"],
                "runs": 1,
                "problems": 0,
                "images_per_s": {"local": 12.5},
            }
        )
    )
    write_index(work / "reports")
    return work


def bench_publish(work: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "bench", "publish", "--repo-dir", str(work), "-m", f"reports: {work.name}", *extra],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@pytest.mark.slow
def test_two_racing_publishers_both_land(origin: Path):
    a = clone_with_report(origin, "a", "1111111")
    b = clone_with_report(origin, "b", "2222222")
    procs = [bench_publish(a), bench_publish(b)]  # both cloned the same tip: one push must be rejected
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert sum("1 rebase(s)" in o for o in outs) == 1, outs  # the loser rebased once, nobody forced

    check = origin.parent / "check"
    git(origin.parent, "clone", "--quiet", str(origin), str(check))
    assert (check / "reports" / "2026-11-22-1111111" / "README.md").is_file()
    assert (check / "reports" / "2026-11-22-2222222" / "README.md").is_file()
    index = (check / "reports" / "README.md").read_text()
    # the conflicting index was regenerated from both folders, not merged line by line
    assert "[2026-11-22-1111111](2026-11-22-1111111/README.md)" in index
    assert "[2026-11-22-2222222](2026-11-22-2222222/README.md)" in index
    assert "<<<<<<<" not in index
    assert index == write_index(check / "reports").read_text()
    log = git(check, "log", "--format=%an|%cn|%s", "main").splitlines()
    assert len(log) == 3  # seed + two report commits, linear: nothing rewritten
    for line in log[:2]:
        author, committer, subject = line.split("|")
        assert author == committer == BOT_NAME
        assert subject.endswith("[skip ci]")
    assert git(check, "rev-list", "--merges", "main") == ""


def test_conflicting_report_is_not_forced(origin: Path):
    a = clone_with_report(origin, "a", "3333333")
    b = clone_with_report(origin, "b", "3333333")
    (b / "reports" / "2026-11-22-3333333" / "README.md").write_text("# a different report for the same commit\n")
    assert publish(a, message="reports: a", pause_s=0, regenerate=REGENERATE).status == "pushed"
    tip = git(origin, "rev-parse", "main")
    with pytest.raises(
        AtlasError, match=r"conflict with ours in reports/2026-11-22-3333333/README.md.*nothing was pushed or forced"
    ):
        publish(b, message="reports: b", pause_s=0, regenerate=REGENERATE)
    assert git(origin, "rev-parse", "main") == tip
    assert "rebase" not in git(b, "status")  # the rebase was aborted, the clone is usable


def test_nothing_to_publish_then_an_unpushed_commit_is_pushed_later(origin: Path, tmp_path: Path):
    work = tmp_path / "w"
    git(tmp_path, "clone", "--quiet", str(origin), str(work))
    assert publish(work).status == "nothing"
    (work / "reports" / "x.md").write_text("x\n")
    git(work, "remote", "set-url", "origin", str(tmp_path / "missing.git"))
    with pytest.raises(AtlasError, match="git push to origin main failed .*not retried"):
        publish(work, pause_s=0)
    git(work, "remote", "set-url", "origin", str(origin))
    result = publish(work, pause_s=0)  # the commit made before is pushed now
    assert result.status == "pushed"
    assert git(origin, "rev-parse", "main").strip() == result.commit


def test_bad_setup_is_a_clear_error(tmp_path: Path):
    with pytest.raises(AtlasError, match="not a git working tree"):
        publish(tmp_path)


def test_push_errors_never_show_credentials_in_the_remote_url(tmp_path: Path, origin: Path):
    work = clone_with_report(origin, "w", "4444444")
    git(work, "remote", "set-url", "origin", "https://x-access-token:ghs_SECRETtoken42@127.0.0.1:9/o/r.git")
    with pytest.raises(AtlasError) as info:
        publish(work, pause_s=0, attempts=2)
    assert "ghs_SECRETtoken42" not in str(info.value)
    assert "not retried" in str(info.value)
