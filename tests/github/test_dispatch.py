"""`workflow_dispatch` deploys only a commit on the default branch or the head of an open
pull request (issue 24), asked of the GitHub REST double through the real HTTP client."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.github.conftest import HEAD, REPO, WRITE_TOKEN
from tests.github.rest_double import GitHubDouble

ROOT = Path(__file__).resolve().parents[2]
ON_MAIN, CLOSED_HEAD, ELSEWHERE = "c" * 40, "d" * 40, "e" * 40


def check(double: GitHubDouble, sha: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env.update(
        GITHUB_TOKEN=WRITE_TOKEN, GITHUB_REPOSITORY=REPO, DEFAULT_BRANCH="main", GITHUB_API_URL=double.url + "/api/v3"
    )
    return subprocess.run(
        [sys.executable, "-m", "bench.gitops.dispatch", sha], cwd=ROOT, env=env, capture_output=True, text=True
    )


def test_dispatch_only_for_the_default_branch_or_an_open_pr() -> None:
    double = GitHubDouble(
        tokens={WRITE_TOKEN: "read"},
        repos={REPO},
        pulls={(REPO, 7): HEAD, (REPO, 8): CLOSED_HEAD},
        closed={(REPO, 8)},
        on_default={ON_MAIN},
    ).start()
    try:
        ok = check(double, ON_MAIN)
        assert ok.returncode == 0 and "is on main" in ok.stdout, ok.stderr
        ok = check(double, HEAD)
        assert ok.returncode == 0 and "open pull request #7" in ok.stdout, ok.stderr
        for sha in (CLOSED_HEAD, ELSEWHERE):  # a closed PR's head, a commit nowhere we trust
            refused = check(double, sha)
            assert refused.returncode == 2 and "not deployed" in refused.stderr, refused.stderr
            assert refused.stderr.count("\n") == 1
        refused = check(double, "main")
        assert refused.returncode == 2 and "40-hex" in refused.stderr
    finally:
        double.stop()
