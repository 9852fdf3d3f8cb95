"""`bench pr` (bench/gitops/pr.py): a PR's head and merge-base, run here, and the comment."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.errors import ConfigError
from tests.bench.gitops.test_hooks import ENV, ROOT, SHORT, _project_snapshot, git


def test_envs_from_labels():
    from bench.gitops.pr import envs_from_labels

    assert envs_from_labels('["bench:local", "bug", "bench:local-slurm", "bench:local"]') == ("local", "local-slurm")
    assert envs_from_labels('["documentation"]') == ("local",)
    assert envs_from_labels("") == ("local",)
    with pytest.raises(ConfigError, match="JSON list"):
        envs_from_labels("bench:local")


@pytest.mark.slow
@pytest.mark.skipif(
    not (ROOT / "workflows/biggan/__main__.py").is_file() or not (ROOT / "bench/commands/run.py").is_file(),
    reason="needs the workload and `bench run`",
)
def test_pr_run_measures_head_and_merge_base_and_writes_the_comment(tmp_path: Path):
    import json

    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "--quiet", "-b", "main")
    _project_snapshot(repo)
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", "base")
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "--quiet", "-b", "feature")
    (repo / "NOTES.md").write_text("a change in the PR\n")
    git(repo, "add", "NOTES.md")
    git(repo, "commit", "--quiet", "-m", "pr change")
    head = git(repo, "rev-parse", "HEAD").strip()
    args = [
        sys.executable,
        "-m",
        "bench",
        "pr",
        "--pr",
        "12",
        "--base",
        "main",
        "--labels-json",
        '["bench:local"]',
        "--results",
        str(tmp_path / "results"),
        "--out",
        str(tmp_path / "pr"),
        "--report-url",
        "https://example.org/runs/1",
        "--threshold",
        "images_per_s=50%",
        "--runs",
        "1",
    ]
    for item in SHORT:
        args += ["--set", item]
    p = subprocess.run(args, cwd=repo, env=ENV, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    meta = json.loads((tmp_path / "pr" / "pr.json").read_text())
    assert meta == {"pr": 12, "head_sha": head, "base_sha": base, "envs": ["local"], "experiment": "smoke"}
    body = (tmp_path / "pr" / "comment.md").read_text()
    assert f"`{head[:12]}` vs merge-base `{base[:12]}`" in body
    assert "### local" in body and "1 run(s) of the PR, 1 of the merge-base" in body
    # one run a side can show no regression: the headline says so, never "No regression found"
    assert "**Not enough runs to judge**: 1 run a side on local" in body and "No regression found" not in body
    assert "| images/s" in body
    assert "images_per_s 50%" in body  # the threshold reached the verdicts
    assert body.rstrip().endswith("https://example.org/runs/1")
    runs = sorted(p for p in (tmp_path / "results" / "local").iterdir() if p.is_dir())  # not the run index
    shas = {json.loads((r / "run.json").read_text())["git"]["sha"] for r in runs}
    assert shas == {head, base}  # each commit's own code ran
