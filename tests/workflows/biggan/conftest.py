"""Run the real workload as a subprocess (`python -m workflows.biggan`) and read its log."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from workflows.biggan.trainlog import read_events

REPO = Path(__file__).resolve().parents[3]


def workload_cmd(run_dir: Path, *overrides: str, experiment: str = "smoke") -> list[str]:
    cmd = [sys.executable, "-m", "workflows.biggan", "--experiment", experiment, "--run-dir", str(run_dir)]
    for item in overrides:
        cmd += ["--set", item]
    return cmd


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(REPO) + os.pathsep + e.get("PYTHONPATH", "")
    return e


def run_workload(
    run_dir: Path, *overrides: str, experiment: str = "smoke", timeout: float = 180
) -> subprocess.CompletedProcess:
    return subprocess.run(
        workload_cmd(run_dir, *overrides, experiment=experiment),
        cwd=REPO,
        env=env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start_workload(run_dir: Path, *overrides: str) -> subprocess.Popen:
    return subprocess.Popen(
        workload_cmd(run_dir, *overrides),
        cwd=REPO,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def events(run_dir: Path) -> list[dict[str, Any]]:
    """Complete lines of train.jsonl (the one being written right now is skipped)."""
    return read_events(run_dir)


def wait_for_event(run_dir: Path, name: str, proc: subprocess.Popen, timeout: float = 120) -> dict[str, Any]:
    """Poll train.jsonl until an event `name` appears; fail if the process ends first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [e for e in events(run_dir) if e["event"] == name]
        if found:
            return found[0]
        if proc.poll() is not None:
            pytest.fail(f"workload exited ({proc.returncode}) before a {name!r} event: {proc.stderr.read()}")
        time.sleep(0.01)
    proc.kill()
    pytest.fail(f"no {name!r} event within {timeout}s")


def last(evts: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return [e for e in evts if e["event"] == name][-1]
