"""`bench record`: run a command, sample it, and write its `run.json`.

The recorder is what every target finally executes around the workload. It forwards
SIGTERM/SIGINT/SIGUSR1 to the job (so a scheduler's preemption notice reaches the
training loop, which checkpoints and exits 75), passes the job's exit code through,
and writes `run.json` twice: at start (exit.status "running") and at the end, both
atomically, so even a recorder killed with SIGKILL leaves a readable record.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import __version__
from bench.errors import AtlasError
from bench.record.cgroups import CgroupReader
from bench.record.gpus import GpuProbe
from bench.record.provenance import git_info, hardware, hostname, image_info, scheduler_info, software
from bench.record.sampler import Sampler
from bench.records.contract import (
    EXIT_CANNOT_START,
    EXIT_RUNNING,
    RUN_JSON,
    SCHEMA_VERSION,
    STATUS_FAILED,
    TRAIN_JSONL,
    exit_status,
    queue_wait_s,
    samples_name,
)
from bench.records.place import write_json_atomic
from bench.records.schema import schema_problems
from bench.records.trainlog import read_train_log

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1)


def _set_parent_death_signal() -> None:
    """In the child: if the recorder dies (SIGKILL), the job gets SIGTERM, not orphaned."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _cpu_usage() -> dict[str, float]:
    """CPU seconds of the recorder itself (sampler included) and of the job it waited for:
    their ratio is the recorder's overhead, measured on every run."""
    import resource

    me = resource.getrusage(resource.RUSAGE_SELF)
    job = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"cpu_s": round(me.ru_utime + me.ru_stime, 3), "job_cpu_s": round(job.ru_utime + job.ru_stime, 3)}


def _experiment_from_command(command: list[str]) -> str | None:
    for i, arg in enumerate(command[:-1]):
        if arg == "--experiment":
            return command[i + 1]
    return None


def _env_kind(env: str) -> str | None:
    try:
        from bench.envs import load_env

        return load_env(env).kind
    except Exception:
        return None


class Recorder:
    def __init__(
        self, run_dir: Path, env: str, command: list[str], interval_s: float = 1.0, run_id: str | None = None
    ) -> None:
        if not command:
            raise AtlasError(
                "nothing to record: give the command after `--`, e.g. "
                "bench record --run-dir runs/x --env local -- python -m workflows.biggan ..."
            )
        self.run_dir = Path(run_dir)
        self.env = env
        self.command = list(command)
        self.interval_s = interval_s
        self.run_id = run_id or os.environ.get("ATLAS_RUN_ID") or self.run_dir.resolve().name
        self.host = hostname()
        self.record: dict[str, Any] = {}
        self.child: subprocess.Popen[bytes] | None = None
        self.received: list[int] = []
        # Multi-node jobs run one recorder per node into one shared run dir: every node
        # writes its own samples-<host>.csv, only the first node writes run.json.
        self.primary = os.environ.get("SLURM_NODEID", "0") == "0"

    def _write_run_json(self) -> None:
        """Write run.json; a record that breaks the schema is still written (the job's
        facts are never lost), with each problem listed in `sampler_errors`."""
        if not self.primary:
            return
        for problem in schema_problems(self.record):
            fault = {"source": "schema", "message": problem}
            if fault not in self.record.setdefault("sampler_errors", []):
                self.record["sampler_errors"].append(fault)
        write_json_atomic(self.run_dir / RUN_JSON, self.record)

    def _initial_record(self, gpu: GpuProbe, start: float) -> dict[str, Any]:
        previous: list[dict[str, Any]] = []
        old_path = self.run_dir / RUN_JSON
        if old_path.exists():  # a resumed run in the same directory: keep its history
            try:
                old = json.loads(old_path.read_text())
                previous = list(old.get("previous_attempts") or [])
                previous.append({k: old.get(k) for k in ("start_time", "end_time", "exit", "hosts", "scheduler")})
            except (OSError, ValueError, AttributeError):
                previous = [{"note": "previous run.json was unreadable"}]
        sched = scheduler_info(_env_kind(self.env))
        sched["start_time"] = start
        if sched["submit_time"] is not None:
            sched["queue_wait_s"] = queue_wait_s(sched["submit_time"], start)
        return {
            "schema_version": SCHEMA_VERSION,
            "bench_version": __version__,
            "run_id": self.run_id,
            "env": self.env,
            "experiment": _experiment_from_command(self.command),
            "config": None,
            "config_sha256": None,
            "git": git_info(),
            "image": image_info(),
            "hosts": [self.host],
            "hardware": hardware(gpu.info),
            "software": {"python": sys.version.split()[0]},  # completed after the job ends
            "command": self.command,
            "scheduler": sched,
            "exit": {"status": EXIT_RUNNING, "code": None, "signal": None},
            "resumed_from": None,
            "sampler_errors": list(gpu.faults),
            "sample_interval_s": self.interval_s,
            "samples_file": None,
            "start_time": start,
            "end_time": None,
            "previous_attempts": previous,
        }

    def _forward(self, signum: int, _frame: Any) -> None:
        self.received.append(signum)
        if self.child is not None and self.child.poll() is None:
            try:
                self.child.send_signal(signum)
            except OSError:
                pass

    def run(self) -> int:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        start = time.time()
        gpu = GpuProbe()
        gpu.start()
        self.record = self._initial_record(gpu, start)
        # The job is started before anything slow (git, torch import) can delay it.
        # Own process group: a terminal's Ctrl-C reaches the job once, through us.
        old_handlers = {s: signal.signal(s, self._forward) for s in FORWARDED}
        try:
            self.child = subprocess.Popen(self.command, process_group=0, preexec_fn=_set_parent_death_signal)
        except OSError as exc:
            for s, h in old_handlers.items():
                signal.signal(s, h)
            self.record["exit"] = {
                "status": STATUS_FAILED,
                "code": EXIT_CANNOT_START,
                "signal": None,
                "error": f"could not start {self.command[0]!r}: {exc}",
            }
            self.record["end_time"] = time.time()
            self._write_run_json()
            print(f"bench record: could not start {self.command[0]!r}: {exc}", file=sys.stderr)
            return EXIT_CANNOT_START
        sampler = Sampler(
            self.run_dir / samples_name(self.host),
            self.child.pid,
            self.interval_s,
            gpu_probe=gpu,
            cgroup=CgroupReader(),
        )
        sampler.start()
        self.record["samples_file"] = sampler.csv_path.name
        self._write_run_json()
        while True:
            try:
                code = self.child.wait()
                break
            except KeyboardInterrupt:  # only if SIGINT arrived before our handler
                continue
        end = time.time()
        sampler.stop()
        gpu.stop()
        # Our handlers stay until run.json is final: a signal that lands now (Slurm's
        # time-limit warning just after the job ended) must not kill us half-way and turn
        # a finished job into a lost record; it is noted in exit.signals_forwarded.
        self.record["recorder"] = _cpu_usage()  # before importing torch below
        try:  # after the job, so importing torch costs it nothing
            self.record["software"] = software()
        except Exception as exc:
            gpu.fault("software", exc)
        self._finish(code, end, sampler)
        for s, h in old_handlers.items():
            signal.signal(s, h)
        return code if code >= 0 else 128 - code

    def _finish(self, code: int, end: float, sampler: Sampler) -> None:
        rec = self.record
        log = read_train_log(self.run_dir / TRAIN_JSONL)  # read once, complete lines only
        starts = log.of("run_start")
        if starts:
            first = starts[0]
            rec["config"] = first.get("config")
            rec["config_sha256"] = first.get("config_sha256")
            rec["experiment"] = first.get("experiment") or rec["experiment"]
        mine = [e for e in starts if e["time"] >= rec["start_time"]]
        if mine:
            rec["resumed_from"] = mine[0].get("resumed_from")
        my_stops = [e for e in log.of("run_stop") if e["time"] >= rec["start_time"]]
        last_stop = my_stops[-1] if my_stops else None
        sig = -code if code < 0 else None
        stop = str(last_stop["status"]) if last_stop is not None and last_stop.get("status") else None
        status = exit_status(code if code >= 0 else None, signal.Signals(sig).name if sig else None, stop)
        rec["exit"] = {
            "status": status,
            "code": code if code >= 0 else None,
            "signal": signal.Signals(sig).name if sig else None,
            "signals_forwarded": [signal.Signals(s).name for s in self.received],
        }
        rec["end_time"] = end
        rec["scheduler"]["end_time"] = end
        rec["sampler_errors"] = list(sampler.faults)
        rec["samples_file"] = sampler.csv_path.name
        rec["samples_rows"] = sampler.rows
        self._write_run_json()
