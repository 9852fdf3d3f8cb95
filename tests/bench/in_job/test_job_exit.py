"""bench/in_job/job_exit.py: the batch script's exit code from the launcher's and train.jsonl's last run_stop."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.in_job.job_exit import main, this_jobs_run_stop

REPO = Path(__file__).resolve().parents[3]


def write_log(run_dir: Path, *events: dict) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "train.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))


def test_only_this_jobs_last_run_stop_counts(tmp_path: Path) -> None:
    write_log(tmp_path, {"event": "run_start", "time": 100}, {"event": "run_stop", "time": 150, "status": "preempted"})
    assert this_jobs_run_stop(tmp_path, since=120) == "preempted"
    assert this_jobs_run_stop(tmp_path, since=151) is None  # an earlier job's word
    write_log(tmp_path, {"event": "run_stop", "time": 150, "status": "preempted"}, {"event": "train", "time": 160})
    assert this_jobs_run_stop(tmp_path, since=120) is None  # not the last event
    assert this_jobs_run_stop(tmp_path / "none", since=0) is None


@pytest.mark.parametrize(
    "code, status, warned, expected",
    [(1, "preempted", 0, 75), (138, "success", 0, 0), (1, None, 0, 1), (138, None, 1, 75)],
)
def test_prints_the_code_the_job_ends_with(tmp_path: Path, capsys, code, status, warned, expected) -> None:
    if status:
        write_log(tmp_path, {"event": "run_stop", "time": 200, "status": status})
    argv = ["--run-dir", str(tmp_path), "--code", str(code), "--since", "100", "--warned", str(warned)]
    assert main(argv) == 0
    out = capsys.readouterr()
    assert out.out.strip() == str(expected)
    assert ("ends the job as" in out.err) == (expected != code)


def test_runs_as_the_batch_script_calls_it(tmp_path: Path) -> None:
    write_log(tmp_path, {"event": "run_stop", "time": 200, "status": "max_seconds"})
    proc = subprocess.run(
        [sys.executable, "-m", "bench.in_job.job_exit", "--run-dir", str(tmp_path), "--code", "1", "--since", "200"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0 and proc.stdout == "0\n", proc.stderr
