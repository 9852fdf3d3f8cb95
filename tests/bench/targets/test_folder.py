"""bench/targets/folder.py: what the local and container targets share (run folders here)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bench.envs import CLUSTERS_DIR, Environment
from bench.errors import AtlasError
from bench.records.contract import CANCEL_MARK
from bench.targets import target_class
from bench.targets.base import RunState
from bench.targets.folder import FolderTarget


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


def test_list_fetch_finished_only_and_cancel_marker(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("ATLAS_RUNS_DIR", raising=False)
    target = local_target(tmp_path)
    assert target.runs_dir == tmp_path / "runs" / "here" and target.list_runs() == []
    finished_run(target, "r1", "a" * 40)
    finished_run(target, "r2", "b" * 40)
    assert [r.run_id for r in target.list_runs("aaaa")] == ["r1"]
    assert target.status("r1").state is RunState.COMPLETED
    into = tmp_path / "fetched"
    into.mkdir()
    sched = target.fetch("r2", into)
    assert sched["kind"] == "local" and sorted(p.name for p in into.iterdir()) == ["run.json", "train.jsonl"]
    running = finished_run(target, "r3", "c" * 40)  # its recorder (this process) still alive
    (running / "submit.json").write_text(json.dumps({"pid": os.getpid(), "commit": "c" * 40}))
    (running / "run.json").write_text(json.dumps({"schema_version": 1, "exit": {"status": "running"}}))
    with pytest.raises(AtlasError, match="collect it once it has finished"):
        target.fetch("r3", tmp_path / "never")
    target.mark_cancelled("r1")
    assert (target.runs_dir / "r1" / CANCEL_MARK).exists() and target.was_cancelled("r1")
    with pytest.raises(AtlasError, match="no run 'r9'"):
        target.mark_cancelled("r9")


def test_local_runs_dir_follows_the_environment_variable(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("ATLAS_RUNS_DIR", str(tmp_path / "elsewhere"))
    assert local_target(tmp_path).runs_dir == tmp_path / "elsewhere" / "here"
