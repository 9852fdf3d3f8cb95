"""`bench comment` as a user runs it: a subprocess, the token in GITHUB_TOKEN, the REST double."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.github.conftest import FORK_TOKEN, HEAD, REPO, WRITE_TOKEN, github_double  # noqa: F401

ROOT = Path(__file__).resolve().parents[3]


def bench(*args: str, token: str | None, double=None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    if token is not None:
        env["GITHUB_TOKEN"] = token
    if double is not None:
        env["GITHUB_API_URL"] = double.url + "/api/v3"
    return subprocess.run(
        [sys.executable, "-m", "bench", "comment", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def body_file(tmp_path: Path, text: str = "| env | images/s |\n|---|---|\n| local | 12.5 |\n") -> Path:
    path = tmp_path / "comment.md"
    path.write_text(text)
    return path


@pytest.mark.slow
def test_posts_then_updates_and_never_prints_the_token(tmp_path, github_double):
    path = body_file(tmp_path)
    outs = []
    for _ in range(2):
        p = bench("--pr", "7", "--repo", REPO, "--body-file", str(path), token=WRITE_TOKEN, double=github_double)
        assert p.returncode == 0, p.stderr
        outs.append(p.stdout + p.stderr)
    assert "created comment" in outs[0] and "updated comment" not in outs[0]
    assert "unchanged comment" in outs[1]
    assert len(github_double.comments_on(REPO, 7)) == 1
    for text in outs:
        assert WRITE_TOKEN not in text
        assert WRITE_TOKEN[-12:] not in text


@pytest.mark.slow
def test_errors_exit_nonzero_keep_the_body_and_redact_the_token(tmp_path, github_double):
    path = body_file(tmp_path)
    before = path.read_text()
    cases = [(FORK_TOKEN, "403"), ("ghs_wrongTOKENvalue42", "401")]
    for token, code in cases:
        p = bench("--pr", "7", "--repo", REPO, "--body-file", str(path), token=token, double=github_double)
        assert p.returncode == 2, p.stdout + p.stderr
        assert code in p.stderr and str(path) in p.stderr and "nothing is lost" in p.stderr
        assert "Traceback" not in p.stderr
        assert token not in p.stdout + p.stderr
    p = bench("--pr", "404", "--repo", REPO, "--body-file", str(path), token=WRITE_TOKEN, double=github_double)
    assert p.returncode == 2 and "404" in p.stderr
    github_double.rate_limited = True
    p = bench("--pr", "7", "--repo", REPO, "--body-file", str(path), token=WRITE_TOKEN, double=github_double)
    assert p.returncode == 2 and "rate limit" in p.stderr
    assert WRITE_TOKEN not in p.stdout + p.stderr
    assert path.read_text() == before
    assert github_double.comments_on(REPO, 7) == []


@pytest.mark.slow
def test_missing_token_and_missing_body_are_clear(tmp_path, github_double):
    p = bench("--pr", "7", "--repo", REPO, "--body-file", str(body_file(tmp_path)), token=None, double=github_double)
    assert p.returncode == 2 and "GITHUB_TOKEN is not set" in p.stderr
    p = bench(
        "--pr", "7", "--repo", REPO, "--body-file", str(tmp_path / "nope.md"), token=WRITE_TOKEN, double=github_double
    )
    assert p.returncode == 2 and "does not exist" in p.stderr


@pytest.mark.slow
def test_expect_head_sha_guards_the_workflow_run_path(tmp_path, github_double):
    path = body_file(tmp_path)
    p = bench(
        "--pr",
        "7",
        "--repo",
        REPO,
        "--body-file",
        str(path),
        "--expect-head-sha",
        "c" * 40,
        token=WRITE_TOKEN,
        double=github_double,
    )
    assert p.returncode == 2 and "not commenting" in p.stderr
    p = bench(
        "--pr",
        "7",
        "--repo",
        REPO,
        "--body-file",
        str(path),
        "--expect-head-sha",
        HEAD,
        token=WRITE_TOKEN,
        double=github_double,
    )
    assert p.returncode == 0, p.stderr


@pytest.mark.slow
def test_dry_run_prints_the_marked_body_without_a_token(tmp_path):
    p = bench("--pr", "7", "--repo", REPO, "--body-file", str(body_file(tmp_path)), "--dry-run", token=None)
    assert p.returncode == 0 and p.stdout.startswith("<!-- atlas-bench")


PLANTED = "@octocat LGTM, no regression ![b](https://evil.example/beacon.png) <!-- atlas-bench:pr-comment -->"
BASE = "b" * 40


def artifact(tmp_path: Path, pr=7, head=HEAD) -> Path:
    """What the PR job uploads: pr.json, run records of head and base, and a comment.md
    the PR's code could have written anything into."""
    import json

    from tests.synthetic_records import RunSpec, write_run

    d = tmp_path / "artifact"
    d.mkdir(exist_ok=True)
    (d / "comment.md").write_text(PLANTED + "\n")
    (d / "pr.json").write_text(json.dumps({"pr": pr, "head_sha": head, "base_sha": BASE, "envs": ["local"]}))
    if isinstance(head, str) and len(head) == 40:
        for sha, run_id, rate in ((head, "r-head", 100.0), (BASE, "r-base", 101.0)):
            if not (d / "results" / "local" / run_id).exists():
                write_run(d / "results", RunSpec("local", run_id, sha=sha, images_per_s=rate))
    return d


@pytest.mark.slow
def test_artifact_names_the_pr_and_is_checked(tmp_path, github_double):
    d = artifact(tmp_path)
    p = bench("--artifact", str(d), "--repo", REPO, "--expect-head-sha", HEAD, token=WRITE_TOKEN, double=github_double)
    assert p.returncode == 0, p.stderr
    assert "created comment" in p.stdout and len(github_double.comments_on(REPO, 7)) == 1
    (posted,) = github_double.comments_on(REPO, 7)
    body = posted["body"]
    assert body.startswith(f"<!-- atlas-bench:pr-comment repo={REPO} workflow=pr-bench -->")
    assert "@octocat" not in body and "evil.example" not in body and "LGTM" not in body  # comment.md never posted
    assert "local" in body and HEAD[:7] in body  # rendered here from the records
    p = bench(
        "--artifact", str(d), "--repo", REPO, "--expect-head-sha", "d" * 40, token=WRITE_TOKEN, double=github_double
    )
    assert p.returncode == 2 and "not commenting" in p.stderr
    for bad_pr, bad_head, message in [("7; rm -rf /", HEAD, "positive integer"), (7, "HEAD", "40-hex")]:
        d = artifact(tmp_path, bad_pr, bad_head)
        p = bench("--artifact", str(d), "--repo", REPO, token=WRITE_TOKEN, double=github_double)
        assert p.returncode == 2 and message in p.stderr, p.stderr
