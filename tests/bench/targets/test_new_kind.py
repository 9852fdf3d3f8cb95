"""A new target kind is one module: bench/targets/local.py copied under a new kind name, plus an
environment folder of that kind, validates, is listed and runs a job, with no other file
touched (issue 19). The copy lives in a scratch copy of the repository (a real git repo)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.analysis.run_index import INDEX_FILE

REPO = Path(__file__).resolve().parents[3]
KIND = "plain-ssh"  # a kind name need not be a Python name: its module is plain_ssh.py
MODULE = KIND.replace("-", "_")

pytestmark = pytest.mark.slow


def bench(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", "HOME": str(root), "ATLAS_RUNS_DIR": str(root / "runs")}
    return subprocess.run(
        [sys.executable, "-m", "bench", *argv], cwd=root, env=env, capture_output=True, text=True, timeout=600
    )


def git(root: Path, *argv: str) -> str:
    identity = ["-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false"]
    return subprocess.run(["git", *identity, *argv], cwd=root, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo_with_a_new_kind(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for part in ("bench", "workflows", "clusters"):
        shutil.copytree(REPO / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the project as it is")
    # The experiment: copy the local kind's module under a new name, and one env folder of it.
    source = (root / "bench" / "targets" / "local.py").read_text()
    assert source.count('@register("local")') == 1
    (root / "bench" / "targets" / f"{MODULE}.py").write_text(
        source.replace('@register("local")', f'@register("{KIND}")').replace("LocalTarget", "PlainSshTarget")
    )
    (root / "clusters" / "box").mkdir()
    (root / "clusters" / "box" / "env.yaml").write_text(f"kind: {KIND}\nlocal: true\ninterval_s: 0.5\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a new kind")
    changed = git(root, "show", "--stat", "--format=", "HEAD").split("\n")
    assert sorted(line.split("|")[0].strip() for line in changed if "|" in line) == [
        f"bench/targets/{MODULE}.py",
        "clusters/box/env.yaml",
    ]
    return root


def test_a_copied_kind_validates_lists_and_runs(repo_with_a_new_kind: Path, tmp_path: Path) -> None:
    root = repo_with_a_new_kind
    validate = bench(root, "validate", "box", "--no-experiments")
    assert validate.returncode == 0, validate.stdout + validate.stderr
    envs = json.loads(bench(root, "envs", "--json").stdout)
    assert [e["kind"] for e in envs if e["env"] == "box"] == [KIND]
    bad = root / "clusters" / "box" / "env.yaml"
    bad.write_text(bad.read_text() + "sudo: true\n")  # the kind's schema is the local one: refused
    refused = bench(root, "validate", "box", "--no-experiments")
    assert refused.returncode == 1 and f"unknown key(s) sudo for kind {KIND}" in refused.stdout
    git(root, "checkout", "-q", "--", "clusters/box/env.yaml")
    results = tmp_path / "results"
    run = bench(
        root, "run", "--env", "box", "--experiment", "smoke", "--runs", "1", "--results", str(results),
        "--set", "train.max_iters=3",
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    (record,) = (p for p in (results / "box").iterdir() if p.name != INDEX_FILE)
    run_json = json.loads((record / "run.json").read_text())
    assert run_json["env"] == "box" and run_json["exit"]["status"] == "success"
    assert run_json["scheduler"]["kind"] == KIND
