"""`bench collect` twice at once, and after a collect killed half-way: real processes on
the real local target's run folders (records made by the real `bench record`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.analysis.run_index import INDEX_FILE
from tests.conftest import copy_recorded_runs

REPO = Path(__file__).resolve().parents[3]
WORKLOAD = REPO / "tests" / "bench" / "in_job" / "contract_workload.py"


def finished_runs(runs: Path, count: int) -> list[str]:
    """`count` finished local runs, each recorded by the real recorder around the stand-in
    workload, with the submit.json the local target writes."""
    ids = []
    for i in range(count):
        run_id = f"r{i:02d}-{os.getpid()}"
        run_dir = runs / run_id
        cmd = [sys.executable, "-m", "bench", "record", "--run-dir", str(run_dir), "--env", "local"]
        cmd += ["--interval", "0.05", "--", sys.executable, str(WORKLOAD), str(run_dir), "--iters", "3"]
        submitted = time.time()
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        (run_dir / "job.log").write_text("log\n")
        submit = {"run_id": run_id, "pid": 999999, "submit_time": submitted, "commit": "abc"}
        (run_dir / "submit.json").write_text(json.dumps(submit))
        ids.append(run_id)
    return ids


def record_check(results: Path) -> subprocess.CompletedProcess[str]:
    """`bench check` (issue 11's record checks) over the results tree."""
    cmd = [sys.executable, "-m", "bench", "check", str(results)]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)


def collect_cmd(results: Path) -> list[str]:
    return [sys.executable, "-m", "bench", "collect", "--env", "local", "--results", str(results)]


@pytest.mark.slow
def test_two_collects_at_once_both_succeed_and_place_each_run_once(recorded_local_runs, tmp_path: Path) -> None:
    runs, results = tmp_path / "runs", tmp_path / "results"
    ids = copy_recorded_runs(recorded_local_runs, runs, 6)
    env = dict(os.environ, ATLAS_RUNS_DIR=str(runs))
    pipe = subprocess.PIPE
    cmd = collect_cmd(results)
    procs = [subprocess.Popen(cmd, cwd=REPO, env=env, stdout=pipe, stderr=pipe, text=True) for _ in "ab"]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1] for o in outs]
    assert all("Traceback" not in err for _, err in outs)
    placed = sorted(p.name for p in (results / "local").iterdir() if p.name != INDEX_FILE)
    assert placed == sorted(ids)  # each once, no hidden temporary left
    said = "".join(out for out, _ in outs)
    for run_id in ids:  # one collect placed it, the other found it already there
        assert said.count(f"collected: {results / 'local' / run_id}") == 2, said
        assert said.count(f"already collected: {results / 'local' / run_id}") == 1, said
    checked = record_check(results)
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.slow
def test_a_collect_killed_half_way_is_finished_by_the_next(recorded_local_runs, tmp_path: Path) -> None:
    runs, results = tmp_path / "runs", tmp_path / "results"
    ids = copy_recorded_runs(recorded_local_runs, runs, 2)
    stale = results / "local" / f".{ids[0]}.abcd1234"  # what a SIGKILLed collect leaves
    stale.mkdir(parents=True)
    (stale / "train.jsonl").write_text("half")
    env = dict(os.environ, ATLAS_RUNS_DIR=str(runs))
    killed = subprocess.Popen(collect_cmd(results), cwd=REPO, env=env, stdout=subprocess.DEVNULL)
    time.sleep(0.5)
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=30)
    proc = subprocess.run(collect_cmd(results), cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (results / "local").iterdir() if p.name != INDEX_FILE) == sorted(ids)
    checked = record_check(results)
    assert checked.returncode == 0, checked.stdout + checked.stderr
