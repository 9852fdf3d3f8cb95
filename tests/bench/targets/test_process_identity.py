"""`bench cancel` and `bench status` act only on the run's own process (issue 24).

The scenarios run in a fresh PID namespace (pidns_scenarios.py under `unshare --pid --fork
--mount-proc`), so a pid reused on purpose, a foreign pid and every signal stay among the
`sleep` processes started there: no test can signal a real process of this machine.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bench.environments.load import REPO_ROOT
from bench.targets.process_identity import identity, is_own, signal_own, start_ticks


def in_pid_namespace(tmp_path: Path) -> dict:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) to make a PID namespace")
    script = Path(__file__).with_name("pidns_scenarios.py")
    done = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, str(script), str(tmp_path)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)),
    )
    if done.returncode != 0 and "unshare failed" in done.stderr:
        pytest.skip(f"no PID namespace here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_only_the_runs_own_process_is_signalled(tmp_path: Path) -> None:
    seen = in_pid_namespace(tmp_path)
    # A finished run whose pid was reused: completed (collect takes it), never signalled nor marked.
    case = seen["reused_after_success"]
    assert case["state"] == "completed" and case["alive"] and not case["marked"] and case["cancel"] is False
    # A dead recorder's pid reused: the run is not running (collect does not wait), the new owner lives.
    case = seen["reused_after_recorder_died"]
    assert case["state"] == "failed" and "recorder died" in case["detail"] and case["alive"]
    for name in ("foreign_pid", "legacy_foreign", "fifo_reused"):
        assert seen[name]["state"] != "running" and seen[name]["alive"], (name, seen[name])
    # The workload wrote run_stop: its recorder is finishing; cancel leaves it alone.
    case = seen["own_after_run_stop"]
    assert case["alive"] and case["cancel"] is False and not case["marked"]
    # The control: the run's own live process is signalled (SIGTERM).
    case = seen["own_running"]
    assert case["state"] == "running" and case["cancel"] is True and case["marked"]
    assert case["returncode"] == -signal.SIGTERM


def test_identity_names_this_process_and_nothing_else() -> None:
    me = identity(os.getpid())
    assert me["pid_start_ticks"] == start_ticks(os.getpid()) and is_own(me)
    assert not is_own({**me, "pid_start_ticks": me["pid_start_ticks"] + 1})
    assert not is_own({**me, "boot_id": "another boot"})
    assert not signal_own({**me, "pid_start_ticks": me["pid_start_ticks"] + 1}, 0)
    for pid in (None, 0, 1, -1, True, "12"):
        assert not is_own({"pid": pid, "pid_start_ticks": 1}) and not signal_own({"pid": pid}, 0)
