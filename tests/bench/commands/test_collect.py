"""`bench collect --unreported`: only the commits no report covers yet, on a real local target."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.bench.gitops.test_hooks import ROOT, SHORT, git


@pytest.mark.slow
@pytest.mark.skipif(not (ROOT / "workflows/biggan/__main__.py").is_file(), reason="needs the workload")
def test_collect_new_skips_commits_already_reported(tmp_path: Path):
    from bench.commands.collect import collect_unreported
    from bench.commands.report import report_each_commit as report_commits
    from bench.environments.load import Environment, load_env
    from bench.targets import target_for
    from bench.targets.lifecycle import Submission, submit_runs

    local = load_env("local")
    env = Environment(
        name="local", kind="local", folder=local.folder, settings={**local.settings, "runs_dir": str(tmp_path / "runs")}
    )
    sha = git(ROOT, "rev-parse", "HEAD").strip()
    target = target_for(env)
    (st,) = submit_runs(Submission.checked(target, "smoke", sha, SHORT), 1)
    deadline = time.monotonic() + 600
    while not target.status(st.run_id).state.finished and time.monotonic() < deadline:
        time.sleep(0.2)  # the local status reads a few files: poll often
    reports = tmp_path / "reports"
    assert collect_unreported(env, tmp_path / "results", reports) == [sha]
    assert (tmp_path / "results" / "local" / st.run_id / "run.json").is_file()
    assert len(report_commits(tmp_path / "results", reports)) == 1
    # next scheduled collection, fresh results tree: nothing new, nothing collected
    assert collect_unreported(env, tmp_path / "results2", reports) == []
    assert not (tmp_path / "results2").exists()
