"""Faults around a real `bench record` that must leave the record whole (issue 24):
a resumed run's samples begin at its FIRST attempt; a recorder stopped for a while (kill
-STOP) leaves a gap that check names; a lost final run.json write is rebuilt from
train.jsonl at collect (and named); a rerun's queue wait does not count the first attempt.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from bench.environments.facts import environment_facts
from bench.environments.load import Environment
from bench.records.contract import samples_files
from bench.records.place import freeze
from bench.records.read import load_run
from bench.targets import target_class
from bench.targets.base import RunState
from bench.targets.lifecycle import collect_run
from tests.bench.in_job.test_recorder import REPO, _config_hash, record_cmd, run_record, wait_for


@pytest.mark.slow
def test_a_resumed_run_passes_check(tmp_path: Path) -> None:
    """Samples of a two-attempt run are compared with the first attempt's start."""
    run_dir = tmp_path / "resumed"
    assert run_record(run_dir, "--iters", "70", "--sleep", "0.1").returncode == 0  # > 5 s: beyond the slack
    assert run_record(run_dir, "--iters", "2").returncode == 0
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["start_time"] - meta["previous_attempts"][0]["start_time"] > 6
    run = load_run(run_dir, collected=False)
    assert not [p for p in run.problems if "before the run started" in p or "no samples for" in p], run.problems


@pytest.mark.slow
def test_a_stopped_recorder_leaves_a_named_gap(tmp_path: Path) -> None:
    run_dir = tmp_path / "stopped"
    ready = tmp_path / "ready"
    proc = subprocess.Popen(
        record_cmd(run_dir, "--iters", "250", "--sleep", "0.1", "--ready", str(ready), interval=0.2), cwd=REPO
    )
    try:
        wait_for(ready.exists)
        wait_for(lambda: bool(samples_files(run_dir)) and samples_files(run_dir)[0].read_text().count("\n") >= 4)
        os.kill(proc.pid, signal.SIGSTOP)  # the recorder (and its sampler) stops; the job goes on
        time.sleep(14)
        os.kill(proc.pid, signal.SIGCONT)
        assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    problems = load_run(run_dir, collected=False).problems
    gaps = [p for p in problems if "no samples for" in p]
    assert len(gaps) == 1 and "a data problem" in gaps[0], problems
    assert 13 < float(gaps[0].split("no samples for ")[1].split(" s")[0]) < 60


def test_a_lost_final_write_is_rebuilt_at_collect_and_named(tmp_path: Path, capsys) -> None:
    """run.json as a failed final write leaves it (its start facts, exit 'running') beside a
    train.jsonl that ends with run_stop success: collected as success, marked rebuilt."""
    runs = tmp_path / "runs"
    env = Environment("loc", "local", tmp_path / "clusters" / "loc", {"kind": "local", "runs_dir": str(runs)})
    target = target_class("local")(env)
    run_id = "20261123t020000-01234567-abcd"
    run_dir = runs / "loc" / run_id
    ready = tmp_path / "ready"
    proc = subprocess.Popen(
        record_cmd(run_dir, "--iters", "40", "--sleep", "0.05", "--ready", str(ready), interval=0.1), cwd=REPO
    )
    wait_for(ready.exists)
    wait_for(lambda: _config_hash(run_dir) is not None)
    at_start = (run_dir / "run.json").read_bytes()
    assert proc.wait(timeout=60) == 0
    (run_dir / "run.json").write_bytes(at_start)  # what the recorder's failed final write left
    (run_dir / "submit.json").write_text(json.dumps({"pid": None, "submit_time": json.loads(at_start)["start_time"]}))
    st = target.status(run_id)
    assert st.state == RunState.COMPLETED and "final write was lost" in st.detail, st
    dest = collect_run(target, run_id, tmp_path / "results").path
    meta = json.loads((dest / "run.json").read_text())
    stop = [json.loads(x) for x in (run_dir / "train.jsonl").read_text().splitlines()][-1]
    assert meta["exit"]["status"] == "success" and meta["exit"]["code"] == 0 and "rebuilt" in meta["exit"]
    assert meta["end_time"] == stop["time"] and stop["event"] == "run_stop"
    run = load_run(dest)
    assert any("exit rebuilt at collect" in p for p in run.problems)
    assert "exit rebuilt at collect" in capsys.readouterr().out


def test_a_reruns_queue_wait_counts_only_until_the_first_attempt() -> None:
    """A local run rerun by hand 20 s later: its queue wait is submit -> first start."""
    record = {
        "start_time": 1020.0,
        "scheduler": {"start_time": 1020.0},
        "previous_attempts": [{"start_time": 1000.5, "end_time": 1010.0}],
    }
    env = Environment("loc", "local", Path("/nonexistent"), {"kind": "local"})
    frozen = freeze(record, environment_facts(env), {"submit_time": 1000.0, "start_time": None})
    assert frozen["scheduler"]["queue_wait_s"] == 0.5


@pytest.mark.parametrize("status", ["killed", "failed", "running"])
def test_a_killed_run_with_a_checkpoint_says_how_to_resume(tmp_path: Path, status: str) -> None:
    runs = tmp_path / "runs"
    target = target_class("local")(Environment("loc", "local", tmp_path, {"kind": "local", "runs_dir": str(runs)}))
    run_dir = runs / "loc" / "r1"
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / "submit.json").write_text(json.dumps({"pid": None}))
    (run_dir / "run.json").write_text(json.dumps({"exit": {"status": status, "code": None, "signal": "SIGKILL"}}))
    assert "to resume" not in target.status("r1").detail  # no checkpoint: nothing to resume from
    (run_dir / "checkpoints" / "ckpt-00000004.pt").write_bytes(b"bundle")
    st = target.status("r1")
    assert st.state == RunState.FAILED and "to resume, run the command in" in st.detail
    assert str(run_dir / "submit.json") in st.detail
