"""Run inside a fresh PID namespace (`unshare --pid --fork --mount-proc`, see
test_process_identity.py): every pid this script sees, signals or reuses belongs to the
namespace, so a wrong signal can only reach a `sleep` started here. Prints one JSON object
with what each scenario observed; the test asserts on it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench.environments.load import Environment
from bench.records.contract import CANCEL_MARK
from bench.targets import target_class
from bench.targets.process_identity import identity

RUN = "20261123t010000-01234567-{}"


def sleeper(own_session: bool = True) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "600"], start_new_session=own_session)


def reuse(pid: int) -> subprocess.Popen[bytes]:
    """A new, unrelated process that gets `pid` (root in this namespace sets ns_last_pid)."""
    Path("/proc/sys/kernel/ns_last_pid").write_text(str(pid - 1))
    proc = sleeper()
    if proc.pid != pid:
        raise SystemExit(f"could not reuse pid {pid} (got {proc.pid})")
    return proc


def dead_identity() -> dict:
    """The identity of a process that ran and exited (reaped): its pid is free again."""
    proc = sleeper()
    info = identity(proc.pid)
    proc.kill()
    proc.wait()
    time.sleep(0.05)  # the next process starts a few clock ticks later, as any reuse does
    return info


def run_folder(target, name: str, submit: dict, exit_status: str | None, train_tail: str | None = None) -> str:
    run_id = RUN.format(name)
    run_dir = target.runs_dir / run_id
    run_dir.mkdir(parents=True)
    (run_dir / "submit.json").write_text(json.dumps({"submit_time": time.time(), **submit}))
    if exit_status == "fifo":
        os.mkfifo(run_dir / "run.json")
    elif exit_status is not None:
        (run_dir / "run.json").write_text(json.dumps({"run_id": run_id, "exit": {"status": exit_status, "code": 0}}))
    if train_tail:
        (run_dir / "train.jsonl").write_text(train_tail + "\n")
    return run_id


def outcome(target, run_id: str, proc: subprocess.Popen[bytes]) -> dict:
    st = target.status(run_id)
    answer = target.cancel(run_id)
    time.sleep(0.2)
    return {
        "pid": proc.pid,
        "state": st.state.value,
        "detail": st.detail,
        "cancel": answer,
        "marked": (target.runs_dir / run_id / CANCEL_MARK).exists(),
        "alive": proc.poll() is None,
    }


def main() -> None:
    root = Path(sys.argv[1])
    data = {"kind": "local", "local": True, "runs_dir": str(root / "runs")}
    target = target_class("local")(Environment("loc", "local", root / "clusters" / "loc", data))
    results: dict[str, dict] = {}
    procs: list[subprocess.Popen[bytes]] = []

    # A finished run whose pid now belongs to another process.
    info = dead_identity()
    victim = reuse(info["pid"])
    procs.append(victim)
    results["reused_after_success"] = outcome(target, run_folder(target, "a", info, "success"), victim)

    # The recorder died (run.json still says running) and its pid was reused.
    info = dead_identity()
    victim = reuse(info["pid"])
    procs.append(victim)
    results["reused_after_recorder_died"] = outcome(target, run_folder(target, "b", info, "running"), victim)

    # A foreign live process named in submit.json with another process's start time.
    foreign = sleeper()
    procs.append(foreign)
    forged = {**dead_identity(), "pid": foreign.pid}
    results["foreign_pid"] = outcome(target, run_folder(target, "c", forged, "running"), foreign)

    # An old submit.json (pid only) naming a process that started long before the submit.
    old = sleeper()
    procs.append(old)
    legacy = {"pid": old.pid, "submit_time": time.time() + 3600}
    results["legacy_foreign"] = outcome(target, run_folder(target, "d", legacy, "running"), old)

    # run.json is a FIFO and the pid was reused.
    info = dead_identity()
    victim = reuse(info["pid"])
    procs.append(victim)
    results["fifo_reused"] = outcome(target, run_folder(target, "e", info, "fifo"), victim)

    # The run's own process, still alive, after the workload's run_stop: left alone.
    own = sleeper()
    procs.append(own)
    stop = json.dumps({"event": "run_stop", "status": "success"})
    results["own_after_run_stop"] = outcome(target, run_folder(target, "f", identity(own.pid), "running", stop), own)

    # The run's own process, alive, record running: it is signalled (the control case).
    own = sleeper()
    procs.append(own)
    results["own_running"] = outcome(target, run_folder(target, "g", identity(own.pid), "running"), own)
    results["own_running"]["returncode"] = own.wait(timeout=10)

    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    print(json.dumps(results))


if __name__ == "__main__":
    main()
