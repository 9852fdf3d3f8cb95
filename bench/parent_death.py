"""Children that die with `bench`: a guard that a killed `bench` takes along with its whole process group.

ansible-runner starts `ansible-playbook` through pexpect with SIGHUP ignored, in a session of
its own: a `bench collect` killed with SIGKILL left the playbook (and the `sacct` or `sleep`
it ran) working for minutes as an orphan. `bench` therefore starts such a command through
this guard (`python -m bench.parent_death COMMAND...`), which

- asks the kernel for SIGTERM when its parent dies (`PR_SET_PDEATHSIG`, kept across exec:
  https://man7.org/linux/man-pages/man2/pr_set_pdeathsig.2const.html) and exits at once if
  that parent is already gone (the race between fork and prctl);
- leads its own process group, starts COMMAND in it, and on SIGTERM, SIGINT or SIGHUP
  stops the whole group: SIGTERM, a grace period, then SIGKILL for what is left (Ansible's
  workers and the module processes they started are in that group).

The exit status is COMMAND's; a stopped group exits 128 + the signal.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from types import FrameType

PARENT_ENV = "ATLAS_PARENT_PID"  # the pid the guard must be a child of (set by the caller)
PR_SET_PDEATHSIG = 1
GRACE_S = 5.0  # how long the group has to end after SIGTERM before SIGKILL


def set_parent_death_signal(sig: int = signal.SIGTERM) -> bool:
    """Ask Linux to send `sig` to this process when its parent dies; False where prctl is missing."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def dies_with(parent: int, sig: int = signal.SIGKILL) -> bool:
    """In a forked child: arm `sig` for when its parent dies; False when `parent` is already
    gone (it died between the fork and the prctl, so no signal will come)."""
    set_parent_death_signal(sig)
    return os.getppid() == parent


def guard_command(command: list[str]) -> list[str]:
    """`command` run through the guard with this Python (for subprocess calls that take a list)."""
    return [sys.executable, "-m", "bench.parent_death", *command]


def guard_env() -> dict[str, str]:
    """The environment entry that tells the guard who its parent must be (this process)."""
    return {PARENT_ENV: str(os.getpid())}


def _stop_group(child: subprocess.Popen[bytes], signum: int) -> None:
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)
    try:
        os.killpg(0, signal.SIGTERM)
    except OSError:
        pass
    deadline = time.monotonic() + GRACE_S
    while child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    sys.stdout.flush()
    os.killpg(0, signal.SIGKILL)  # what ignored SIGTERM, and this guard with it


def main(argv: list[str]) -> int:
    """Run argv[0] with its arguments as a child that dies with this guard's parent."""
    if not argv:
        print("usage: python -m bench.parent_death COMMAND [ARG...]", file=sys.stderr)
        return 2
    set_parent_death_signal(signal.SIGTERM)
    expected = os.environ.pop(PARENT_ENV, "")
    if expected.isdigit() and os.getppid() != int(expected):
        return 128 + signal.SIGTERM  # the parent died before the death signal was armed
    try:
        os.setpgid(0, 0)
    except PermissionError:
        pass  # already a session leader (pexpect's pty): its group is its own
    try:
        child = subprocess.Popen(argv)
    except OSError as exc:
        print(f"cannot start {argv[0]!r}: {exc}", file=sys.stderr)
        return 127

    def stop(signum: int, _frame: FrameType | None) -> None:
        _stop_group(child, signum)

    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, stop)
    code = child.wait()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
