"""Runs of the real workload without paying torch's import each time: a fork server.

Why: one smoke run of `python -m workflows.biggan` costs ~6 s of CPU, ~4 s of it before
the first iteration is even built (importing torch, the compiler stack Adam's constructor
loads, the meta kernels the FLOP count needs). A test that proves `bench explain` on real
runs needs five runs a side (the explanation's gate), so that start-up alone would cost
minutes of CPU. The server imports those libraries once; each run is a fork of it that
imports the workload's own code afresh from the run's working folder (a commit's
checkout) and runs `workflows.biggan` as `python -m` does, with the caller's argv,
environment and standard streams. Everything the workload and its recorder do is real;
only the interpreter's start-up is shared. What differs: the run is the server's child, not
in the process tree `bench record` samples (its per-job CPU and memory columns read ~0) and
out of reach of a signal sent to the job's command; a test that reads either, or stops a
run, runs the workload directly.

`python tests/warm_workload.py serve SOCKET` serves; `python tests/warm_workload.py run
SOCKET -- ARGS...` is the job's command (what `bench record` wraps): it hands its argv,
environment, working folder and streams to the server and exits with the run's status.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

LIBRARIES = ("torch", "torch._dynamo", "torch.utils.flop_counter", "torch.profiler", "torch.nn.functional")


def _run_child(request: dict, fds: list[int]) -> None:
    """In the forked child: become `python -m workflows.biggan ARGS` in the caller's folder."""
    import runpy
    import traceback

    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[0] = request["cwd"]  # as `python -m` puts the working folder first
    sys.argv = ["-m", *request["args"]]
    code = 0
    try:
        runpy.run_module("workflows.biggan", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)


def serve(path: str) -> None:
    """Import the heavy libraries once, then fork one child per request, one at a time, until
    the process that started it is gone."""
    import importlib

    for name in LIBRARIES:
        importlib.import_module(name)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(4)
    listener.settimeout(2.0)
    parent = os.getppid()
    print("ready", flush=True)
    while True:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            if os.getppid() != parent:  # the test that started it is gone: no orphan server
                return
            continue
        conn.settimeout(None)
        with conn:
            data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
            pid = os.fork()
            if pid == 0:
                listener.close()
                conn.close()
                _run_child(json.loads(data), fds)
            for fd in fds:
                os.close(fd)
            _, status = os.waitpid(pid, 0)
            conn.sendall(str(os.waitstatus_to_exitcode(status)).encode())


def run(path: str, args: list[str]) -> int:
    """The job's side: hand this process's argv, environment, folder and streams over; wait."""
    request = {"args": args, "cwd": os.getcwd(), "env": dict(os.environ)}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(path)
        socket.send_fds(conn, [json.dumps(request).encode()], [0, 1, 2])
        conn.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := conn.recv(64):
            answer += chunk
    code = int(answer or b"1")
    return code if code >= 0 else 128 - code


def command(path: Path, *args: str) -> list[str]:
    """The job's command: the workload run with `args` through the server at `path`."""
    return [sys.executable, str(Path(__file__).resolve()), "run", str(path), "--", *args]


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        serve(sys.argv[2])
    elif sys.argv[1:2] == ["run"] and sys.argv[3:4] == ["--"]:
        sys.exit(run(sys.argv[2], sys.argv[4:]))
    else:
        sys.exit("usage: warm_workload.py serve SOCKET | run SOCKET -- ARGS...")
