"""Kill a process with SIGKILL and see which of its forked children outlive it.

`bench` forks children to read records and draw charts; each asks the kernel to kill it
when its parent dies (bench.parent_death.set_parent_death_signal). A test starts a script
whose children write their pids to a log, one a line, and then block; this kills the
script once the log names a child and returns the children still alive after `grace_s`.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie waiting for its reaper counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def survivors(script: Path, log: Path, env: dict[str, str] | None = None, grace_s: float = 30.0) -> list[int]:
    """Run `python script log`, SIGKILL it once `log` names a child, and return the logged
    pids still alive `grace_s` later (polled: they usually go at once)."""
    proc = subprocess.Popen([sys.executable, str(script), str(log)], cwd=REPO, env=env)
    try:
        deadline = time.monotonic() + 60
        while not (log.exists() and log.read_text().split()) and time.monotonic() < deadline:
            time.sleep(0.05)
        children = [int(p) for p in log.read_text().split()]
        assert children and proc.pid not in children, "no forked child logged its pid"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + grace_s
        while any(alive(c) for c in children) and time.monotonic() < deadline:
            time.sleep(0.05)
        return [c for c in children if alive(c)]
    finally:
        proc.kill()
        proc.wait()
