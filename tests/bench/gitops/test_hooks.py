"""`bench hooks`: a post-receive hook on a real local bare repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.errors import AtlasError, ConfigError
from bench.gitops.hooks import HOOK_MARKER, LOG_DIR, HookSettings, install, should_run
from bench.gitops.publish import BOT_NAME
from tests.gitrepo import ENV, git

ROOT = Path(__file__).resolve().parents[3]
# Few iterations: the test is about the GitOps plumbing, not about training.
SHORT = ("train.max_iters=4", "train.log_every=2", "train.checkpoint_every=4", "train.ema_start=2")


def bare_repo(tmp_path: Path) -> Path:
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "--quiet", "--bare", "-b", "main", str(bare))
    return bare


def bench_hooks(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bench", "hooks", *args], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=60
    )


def test_install_checks_its_target(tmp_path: Path):
    (tmp_path / "plain").mkdir()
    with pytest.raises(ConfigError, match="not a bare git repository"):
        install(tmp_path / "plain", HookSettings())
    bare = bare_repo(tmp_path)
    foreign = bare / "hooks" / "post-receive"
    foreign.write_text("#!/bin/sh\necho mine\n")
    p = bench_hooks("install", str(bare))
    assert p.returncode == 2 and "was not written by bench" in p.stderr
    assert foreign.read_text() == "#!/bin/sh\necho mine\n"
    p = bench_hooks("install", str(bare), "--replace", "--env", "local", "--experiment", "smoke")
    assert p.returncode == 0, p.stderr
    assert HOOK_MARKER in foreign.read_text() and os.access(foreign, os.X_OK)
    assert bench_hooks("install", str(bare)).returncode == 0  # our own hook may be rewritten


def test_should_run_filters_branches_deletions_and_report_commits(tmp_path: Path):
    bare = bare_repo(tmp_path)
    work = tmp_path / "w"
    git(tmp_path, "clone", "--quiet", str(bare), str(work))
    (work / "a").write_text("a")
    git(work, "add", "a")
    git(work, "commit", "--quiet", "-m", "code")
    code = git(work, "rev-parse", "HEAD").strip()
    git(work, "commit", "--quiet", "--allow-empty", "-m", "reports: x [skip ci]")
    report = git(work, "rev-parse", "HEAD").strip()
    git(work, "push", "--quiet", "origin", "HEAD:main")
    zero = "0" * 40
    assert should_run(bare, zero, code, "refs/heads/main", "main") is None
    assert "not the watched branch" in should_run(bare, zero, code, "refs/heads/topic", "main")
    assert "deleted" in should_run(bare, code, zero, "refs/heads/main", "main")
    assert "[skip ci]" in should_run(bare, code, report, "refs/heads/main", "main")


def test_background_hook_returns_at_once_and_logs(tmp_path: Path):
    bare = bare_repo(tmp_path)
    assert bench_hooks("install", str(bare)).returncode == 0
    work = tmp_path / "w"
    git(tmp_path, "clone", "--quiet", str(bare), str(work))
    git(work, "commit", "--quiet", "--allow-empty", "-m", "reports: only [skip ci]")
    sha = git(work, "rev-parse", "HEAD").strip()
    push = subprocess.run(["git", "push", "origin", "HEAD:main"], cwd=work, env=ENV, capture_output=True, text=True)
    assert push.returncode == 0
    assert "in the background; log:" in push.stderr
    log = bare / LOG_DIR / f"{sha}.log"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and "not running" not in (log.read_text() if log.exists() else ""):
        time.sleep(0.2)
    assert f"not running {sha[:12]}" in log.read_text() and "[skip ci]" in log.read_text()


def _project_snapshot(dest: Path) -> None:
    """This checkout's files (tracked and new, not ignored): the code the push deploys."""
    files = (
        subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True, capture_output=True
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, files):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            (dest / name).write_bytes(src.read_bytes())


@pytest.mark.slow
@pytest.mark.skipif(
    not (ROOT / "workflows/biggan/__main__.py").is_file()
    or not (ROOT / "bench/commands/run.py").is_file()
    or not (ROOT / "bench/commands/report.py").is_file(),
    reason="needs the workload and `bench run`/`bench report`",
)
def test_push_runs_the_local_env_and_commits_a_report(tmp_path: Path):
    bare = bare_repo(tmp_path)
    args = ["install", str(bare), "--foreground", "--env", "local", "--experiment", "smoke"]
    for item in SHORT:
        args += ["--set", item]
    p = bench_hooks(*args)
    assert p.returncode == 0, p.stderr
    work = tmp_path / "dev"
    git(tmp_path, "clone", "--quiet", str(bare), str(work))
    _project_snapshot(work)
    git(work, "add", "--all")
    git(work, "commit", "--quiet", "-m", "the project")
    sha = git(work, "rev-parse", "HEAD").strip()

    push = subprocess.run(
        ["git", "push", "origin", "HEAD:main"], cwd=work, env=ENV, capture_output=True, text=True, timeout=900
    )
    out = push.stdout + push.stderr
    assert push.returncode == 0, out
    assert "time from push to job start:" in out, out
    assert f"report for {sha[:12]} published" in out, out

    log = git(bare, "log", "--format=%H|%an|%s", "main").splitlines()
    assert len(log) == 2, log  # the pushed commit + one report commit (the report push ran nothing)
    report_sha, author, subject = log[0].split("|")
    assert author == BOT_NAME and subject.endswith("[skip ci]") and sha[:12] in subject
    assert log[1].startswith(sha)
    files = git(bare, "show", "--name-only", "--format=", report_sha).split()
    folder = next(f for f in files if f.startswith("reports/") and f.endswith(f"-{sha[:7]}/README.md"))
    report = git(bare, "show", f"{report_sha}:{folder}")
    assert sha[:12] in report and "local" in report
    assert "reports/README.md" in files
    # the run's raw record is kept on the bare repository's results branch (issue 26)
    assert "run record(s) kept on the results branch" in out, out
    kept = git(bare, "ls-tree", "-r", "--name-only", "results").split()
    run_json = next(f for f in kept if f.startswith("runs/local/") and f.endswith("/run.json"))
    assert any(f.startswith(run_json.rsplit("/", 1)[0] + "/samples-") and f.endswith(".cols.xz") for f in kept)
    assert json.loads(git(bare, "show", f"results:{run_json}"))["git"]["sha"] == sha
    assert git(bare, "log", "--format=%an", "results").split("\n")[0] == BOT_NAME


@pytest.mark.slow
@pytest.mark.skipif(not (ROOT / "workflows/biggan/__main__.py").is_file(), reason="needs the workload")
def test_deploy_submits_and_returns_before_training_ends():
    import shutil

    from bench.targets import target_for
    from bench.targets.lifecycle import Submission, submit_runs

    sha = git(ROOT, "rev-parse", "HEAD").strip()
    (st,) = submit_runs(Submission.checked(target_for("local"), "smoke", sha, SHORT), 1)
    assert st.state.value in ("pending", "running"), st  # returned while the job goes on
    target = target_for("local")
    deadline = time.monotonic() + 600
    while not target.status(st.run_id).state.finished and time.monotonic() < deadline:
        time.sleep(0.2)  # the local status reads a few files: poll often
    final = target.status(st.run_id)
    assert final.state.value == "completed", final
    shutil.rmtree(target.runs_dir / st.run_id, ignore_errors=True)


def test_deploy_to_an_unreachable_env_is_a_clear_error(capsys):
    from bench.cli import main
    from bench.targets import target_for
    from bench.targets.lifecycle import Submission

    assert main(["run", "--no-wait", "--env", "moc", "--experiment", "smoke", "--commit", "a" * 40]) == 2
    assert "cannot be used from here" in capsys.readouterr().err
    with pytest.raises(AtlasError, match="must be a git sha"):
        Submission.checked(target_for("local"), "smoke", "")


@pytest.mark.skipif(
    not (ROOT / "workflows/biggan/__main__.py").is_file() or not (ROOT / "bench/commands/run.py").is_file(),
    reason="needs the workload and `bench run`",
)
@pytest.mark.slow
def test_a_failed_run_is_still_reported_and_published(tmp_path: Path):
    bare = bare_repo(tmp_path)
    # valid settings whose data is missing: the job fails at start, its record is collected
    # (a setting the workload rejects is refused before submitting: nothing to report)
    p = bench_hooks(
        "install",
        str(bare),
        "--foreground",
        "--set",
        "data.source=imagefolder",
        "--set",
        "data.path=/nonexistent-atlas-data",
    )
    assert p.returncode == 0, p.stderr
    work = tmp_path / "dev"
    git(tmp_path, "clone", "--quiet", str(bare), str(work))
    _project_snapshot(work)
    git(work, "add", "--all")
    git(work, "commit", "--quiet", "-m", "the project")
    push = subprocess.run(
        ["git", "push", "origin", "HEAD:main"], cwd=work, env=ENV, capture_output=True, text=True, timeout=900
    )
    out = push.stdout + push.stderr
    assert push.returncode == 0, out
    assert "did not complete" in out and "published" in out, out
    assert "the workload said: biggan: error: data.path '/nonexistent-atlas-data'" in out, out
    subjects = git(bare, "log", "--format=%s", "main").splitlines()
    assert len(subjects) == 2 and subjects[0].endswith("[skip ci]")
