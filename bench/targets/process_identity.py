"""Which process is a run's own: recorded at submit, checked before any signal.

A pid alone names a process only while that process lives: once it exits, the kernel hands
the number to the next process that starts (pid_max is 32768 on many machines, so reuse
within an hour is ordinary), and `bench cancel` run as root would then signal whatever
owns it now. So `submit` records the pid together with the process's start time (field 22
of /proc/<pid>/stat, clock ticks since boot, see proc_pid_stat(5):
https://man7.org/linux/man-pages/man5/proc_pid_stat.5.html) and this boot's id
(/proc/sys/kernel/random/boot_id) and its process group (the job starts its own session);
a process is the run's own only while all of them agree.
The signal itself goes through a pidfd (pidfd_open(2), Linux 5.3+) opened *before* the
check, so the process checked is the process signalled even if it exits in between.

A submit.json written before start times were recorded has only the pid and the submit
time: the process is taken as the run's own when it started within a few seconds of the
submit, which a reused pid almost never does.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

PROC = Path("/proc")
BOOT_ID = PROC / "sys" / "kernel" / "random" / "boot_id"
LEGACY_START_WINDOW_S = 5.0  # an old submit.json: the process must have started this close to the submit


def valid_pid(value: Any) -> int | None:
    """`value` as a process id we may signal, or None: never 0, 1 or negative (os.kill(-1)
    signals every process of the user; 0 our own group; 1 is init), never a bool or a text."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 < value < 2**22:
        return None
    return value


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (which may hold spaces and
    parentheses, hence the split at the last ')'); None when there is no such process."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except (OSError, ValueError):
        return None
    try:
        return text.rsplit(")", 1)[1].split()
    except IndexError:
        return None


def _live_fields(pid: int) -> tuple[int, int] | None:
    """(process group, start ticks since boot) of a live (not zombie) process, else None."""
    fields = _stat_fields(pid)
    if not fields or len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    try:
        return int(fields[2]), int(fields[19])  # fields 5 and 22 of the line; fields[0] is field 3
    except ValueError:
        return None


def start_ticks(pid: int) -> int | None:
    """Start time of a live (not zombie) process in clock ticks since boot, else None."""
    live = _live_fields(pid)
    return live[1] if live else None


def boot_id() -> str | None:
    try:
        return BOOT_ID.read_text().strip() or None
    except OSError:
        return None


def _boot_time() -> float | None:
    """Boot time (s since the epoch), from the btime line of /proc/stat."""
    try:
        for line in (PROC / "stat").read_text().splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def identity(pid: int) -> dict[str, Any]:
    """What submit.json records of the process it started: pid, its process group, start
    ticks and the boot id."""
    live = _live_fields(pid)
    return {
        "pid": pid,
        "pgid": live[0] if live else None,
        "pid_start_ticks": live[1] if live else None,
        "boot_id": boot_id(),
    }


def is_own(info: dict[str, Any]) -> bool:
    """Is the process named in submit.json `info` alive and still the one submit started?"""
    pid = valid_pid(info.get("pid"))
    if pid is None:
        return False
    live = _live_fields(pid)
    if live is None:
        return False
    group, now = live
    if isinstance(info.get("pgid"), int) and info["pgid"] != group:
        return False
    recorded = info.get("pid_start_ticks")
    if isinstance(recorded, int) and not isinstance(recorded, bool):
        booted = info.get("boot_id")
        return now == recorded and (not isinstance(booted, str) or booted == boot_id())
    submitted = info.get("submit_time")
    btime = _boot_time()
    if isinstance(submitted, bool) or not isinstance(submitted, (int, float)) or btime is None:
        return False
    started = btime + now / os.sysconf("SC_CLK_TCK")
    return -LEGACY_START_WINDOW_S <= started - submitted <= LEGACY_START_WINDOW_S


def signal_own(info: dict[str, Any], sig: int = signal.SIGTERM) -> bool:
    """Send `sig` to the run's own process only; True if it was sent. The pidfd is opened
    before the identity check, so a pid freed and reused in between is never signalled."""
    pid = valid_pid(info.get("pid"))
    if pid is None:
        return False
    try:
        fd = os.pidfd_open(pid)
    except (OSError, AttributeError):
        return False
    try:
        if not is_own(info):
            return False
        signal.pidfd_send_signal(fd, sig)
        return True
    except ProcessLookupError:
        return False
    finally:
        os.close(fd)
