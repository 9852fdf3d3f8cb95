"""bench/targets/folder.py: what the local and container targets share (run folders here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.environments.load import CLUSTERS_DIR, Environment
from bench.errors import AtlasError
from bench.targets import target_class
from bench.targets.base import RunState
from bench.targets.folder import CANCELLED, FolderTarget
from bench.targets.lifecycle import collect_run


def local_target(tmp_path: Path) -> FolderTarget:
    settings = {"kind": "local", "runs_dir": str(tmp_path / "runs")}
    return target_class("local")(Environment("here", "local", CLUSTERS_DIR / "local", settings))


def finished_run(target: FolderTarget, run_id: str, commit: str) -> Path:
    run_dir = target.runs_dir / run_id
    run_dir.mkdir(parents=True)
    (run_dir / "submit.json").write_text(json.dumps({"pid": None, "commit": commit}))
    (run_dir / "run.json").write_text(json.dumps({"schema_version": 1, "exit": {"status": "success", "code": 0}}))
    (run_dir / "train.jsonl").write_text("")
    return run_dir


def test_both_kinds_share_the_base():
    assert issubclass(target_class("local"), FolderTarget) and issubclass(target_class("container"), FolderTarget)


def test_list_collect_once_and_cancel_marker(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("ATLAS_RUNS_DIR", raising=False)
    target = local_target(tmp_path)
    assert target.runs_dir == tmp_path / "runs" / "here" and target.list_runs() == []
    finished_run(target, "r1", "a" * 40)
    finished_run(target, "r2", "b" * 40)
    assert [r.run_id for r in target.list_runs("aaaa")] == ["r1"]
    assert target.status("r1").state is RunState.COMPLETED
    stray = tmp_path / "results" / "here" / "r1"
    stray.mkdir(parents=True)
    (stray / "notes.txt").write_text("by hand")
    with pytest.raises(AtlasError, match="exists but holds no run.json"):
        collect_run(target, "r1", tmp_path / "results")
    dest = collect_run(target, "r2", tmp_path / "results").path
    assert dest == tmp_path / "results" / "here" / "r2"
    (target.runs_dir / "r2" / "run.json").write_text("{}")  # the source changes ...
    assert (
        collect_run(target, "r2", tmp_path / "results").path == dest
        and json.loads((dest / "run.json").read_text())["exit"]
    )  # ... not the copy
    facts = target.fetch("r1", tmp_path / "empty") if (tmp_path / "empty").mkdir() is None else None
    # what the scheduler knows, and which of the job's files were refused (none here)
    assert facts == {"kind": "local", "job_id": None, "submit_time": None, "skipped_files": []}
    assert sorted(p.name for p in (tmp_path / "empty").iterdir()) == ["run.json", "train.jsonl"]
    target.mark_cancelled("r1")
    assert (target.runs_dir / "r1" / CANCELLED).exists() and target.was_cancelled("r1")
    with pytest.raises(AtlasError, match="no run 'r9'"):
        target.mark_cancelled("r9")


def test_local_runs_dir_follows_the_environment_variable(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("ATLAS_RUNS_DIR", str(tmp_path / "elsewhere"))
    assert local_target(tmp_path).runs_dir == tmp_path / "elsewhere" / "here"
