"""`bench record`: run a command, sample it, and write its `run.json`.

The recorder is what every target finally executes around the workload. It forwards
SIGTERM/SIGINT/SIGUSR1 to the job (so a scheduler's preemption notice reaches the
training loop, which checkpoints and exits 75), passes the job's exit code through,
and writes `run.json` atomically: at start (exit.status "running"), again as soon as the
workload's run_start names the config and its hash, and at the end. A recorder killed
with SIGKILL, or whose final write meets a full disk, leaves a readable record that
says what was trained; a failed final write is one line naming what it lost.
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
from bench.atomic_files import DISK_FULL_ERRNOS, write_json_atomic
from bench.errors import AtlasError
from bench.in_job.cgroups import CgroupReader
from bench.in_job.gpus import GpuProbe
from bench.in_job.observed_shape import observed_shape
from bench.in_job.provenance import git_info, hardware, image_info, scheduler_info, software
from bench.in_job.sampler import Sampler
from bench.in_job.scheduler import probe_for
from bench.records.compile_facts import compile_facts
from bench.records.contract import (
    CANCEL_MARK,
    EXIT_CANNOT_START,
    EXIT_DISK_FULL,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_RUNNING,
    FINISHED_OK,
    RUN_JSON,
    SAMPLES_PREFIX,
    SAMPLES_SUFFIX,
    SCHEMA_VERSION,
    STATUS_CANCELLED,
    STATUS_FAILED,
    STATUS_PREEMPTED,
    TRAIN_JSONL,
    exit_status,
    queue_wait_s,
    samples_name,
)
from bench.records.schema import schema_problems
from bench.records.trainlog import read_train_log
from bench.stage_data import data_record

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1)


def _data_facts(config: dict[str, Any]) -> dict[str, Any]:
    """run.json's `data`: "identical jobs" covers the data, so its sha256 (never fatal to
    the record: a file that cannot be read is a note, not a failed run)."""
    data = config.get("data") or {}
    try:
        synthetic = data.get("source", "synthetic") == "synthetic"
        return data_record(None if synthetic else data.get("path"))
    except (OSError, AttributeError) as exc:
        return {"path": None, "sha256": None, "note": f"could not read the data file: {exc}"}


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


class Recorder:
    def __init__(
        self,
        run_dir: Path,
        env: str,
        command: list[str],
        interval_s: float = 1.0,
        run_id: str | None = None,
        kind: str | None = None,
        scheduler: str | None = None,
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
        self.record: dict[str, Any] = {}
        self.child: subprocess.Popen[bytes] | None = None
        self.received: list[int] = []
        self._run_start_seen = False  # this attempt's run_start read from train.jsonl
        self._final_write_errno: int | None = None
        # The target passed in its kind and scheduler (else ATLAS_KIND / ATLAS_SCHEDULER);
        # the scheduler's probe reads the job id and this node's rank (bench.in_job.scheduler).
        self.kind = kind or os.environ.get("ATLAS_KIND") or None
        self.scheduler = probe_for(scheduler or os.environ.get("ATLAS_SCHEDULER"), os.environ)
        self.host = self.scheduler.host(os.environ)
        # Multi-node jobs run one recorder per node into one shared run dir: every node
        # writes its own samples-<host>.csv, only the first node (rank 0) writes run.json.
        self.primary = self.scheduler.node_rank(os.environ) == 0

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
        known: dict[str, Any] = {}  # the config a previous attempt recorded: known from the start
        old_path = self.run_dir / RUN_JSON
        if old_path.exists():  # a resumed run in the same directory: keep its history
            try:
                old = json.loads(old_path.read_text())
                previous = list(old.get("previous_attempts") or [])
                previous.append({k: old.get(k) for k in ("start_time", "end_time", "exit", "hosts", "scheduler")})
                known = {k: old.get(k) for k in ("config", "config_sha256") if old.get(k) is not None}
            except (OSError, ValueError, AttributeError):
                previous = [{"note": "previous run.json was unreadable"}]
        sched = scheduler_info(self.kind, self.scheduler)
        sched["start_time"] = start
        if sched["submit_time"] is not None:
            sched["queue_wait_s"] = queue_wait_s(sched["submit_time"], start)
        return {
            "schema_version": SCHEMA_VERSION,
            "bench_version": __version__,
            "run_id": self.run_id,
            "env": self.env,
            "experiment": _experiment_from_command(self.command),
            "config": known.get("config"),
            "config_sha256": known.get("config_sha256"),
            "git": git_info(),
            "image": image_info(),
            "hosts": [self.host],
            "hardware": hardware(gpu.info),
            "shape": observed_shape(gpu.info, self.command, scheduler=self.scheduler),
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
        code = self._wait_for_job()
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
        lost = self._finish(code, end, sampler)
        for s, h in old_handlers.items():
            signal.signal(s, h)
        exit_code = code if code >= 0 else 128 - code
        if lost is not None:
            print(f"bench record: error: {lost}", file=sys.stderr)
            if exit_code == EXIT_OK:  # the job did its work; the record could not say so
                return EXIT_DISK_FULL if self._final_write_errno in DISK_FULL_ERRNOS else EXIT_FAILED
        return exit_code

    def _wait_for_job(self) -> int:
        """Wait for the job; until its config is known, look for the workload's run_start
        each interval and write run.json again as soon as it is there, so a record whose
        final write fails still says what was trained."""
        assert self.child is not None
        while True:
            try:
                return self.child.wait(timeout=None if self._config_known() else self.interval_s)
            except subprocess.TimeoutExpired:
                if self._take_config(read_train_log(self.run_dir / TRAIN_JSONL)):
                    try:
                        self._write_run_json()
                    except OSError as exc:  # the end write tries again; the job goes on
                        self.record.setdefault("sampler_errors", []).append(
                            {"source": "run.json", "message": f"start write failed: {exc}"}
                        )
            except KeyboardInterrupt:  # only if SIGINT arrived before our handler
                continue

    def _config_known(self) -> bool:
        return self._run_start_seen

    def _take_config(self, log: Any) -> bool:
        """Config, hash and experiment from this attempt's run_start; True when newly found."""
        if self._run_start_seen:
            return False
        starts = log.of("run_start")
        if not starts:
            return False
        first = starts[0]
        self.record["config"] = first.get("config")
        self.record["config_sha256"] = first.get("config_sha256")
        self.record["experiment"] = first.get("experiment") or self.record["experiment"]
        mine = [e for e in starts if e["time"] >= self.record["start_time"]]
        if not mine:
            return False
        self.record["resumed_from"] = mine[0].get("resumed_from")
        self._run_start_seen = True
        return True

    def _attempt_hosts(self, sampler: Sampler) -> list[str]:
        """This node, then, in a multi-node run, every other node whose samples file this attempt
        wrote into the shared run folder: run.json (written by node 0 only) then names them all."""
        hosts = [self.host]
        nodes = (self.record.get("shape") or {}).get("nodes")
        if not isinstance(nodes, int) or nodes < 2:
            return hosts
        since = float(self.record.get("start_time") or 0) - 1.0
        for path in sorted(self.run_dir.glob(f"{SAMPLES_PREFIX}*{SAMPLES_SUFFIX}")):
            try:
                fresh = path.stat().st_mtime >= since
            except OSError:
                continue
            if fresh and path.name != sampler.csv_path.name:
                hosts.append(path.name[len(SAMPLES_PREFIX) : -len(SAMPLES_SUFFIX)])
        return hosts

    def _finish(self, code: int, end: float, sampler: Sampler) -> str | None:
        """Write the end facts; None, or one line saying what a failed final write lost."""
        rec = self.record
        log = read_train_log(self.run_dir / TRAIN_JSONL)  # read once, complete lines only
        self._take_config(log)
        if isinstance(rec.get("config"), dict):  # from the workload's run_start
            rec["data"] = _data_facts(rec["config"])
        facts = compile_facts(log)
        if facts is not None:  # the compiled path's proof, breaks, recompiles and FLOPs
            rec["compile"] = facts
        my_stops = [e for e in log.of("run_stop") if e["time"] >= rec["start_time"]]
        last_stop = my_stops[-1] if my_stops else None
        sig = -code if code < 0 else None
        stop = str(last_stop["status"]) if last_stop is not None and last_stop.get("status") else None
        status = exit_status(code if code >= 0 else None, signal.Signals(sig).name if sig else None, stop)
        if status == STATUS_PREEMPTED and signal.SIGUSR1 not in self.received:  # not the time-limit warning
            _wait_for_file(self.run_dir / CANCEL_MARK, self.scheduler.cancel_mark_wait_s)
        if status not in FINISHED_OK and (self.run_dir / CANCEL_MARK).exists():
            status = STATUS_CANCELLED  # `bench cancel` or a plain scancel: not a preemption to resume
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
        rec["hosts"] = self._attempt_hosts(sampler)
        try:
            self._write_run_json()
        except OSError as exc:
            self._final_write_errno = exc.errno
            return (
                f"the final {RUN_JSON} could not be written ({exc.strerror or exc}: {self.run_dir / RUN_JSON}); "
                f"it keeps the start facts (config, command, exit.status {EXIT_RUNNING!r}); lost: exit status "
                f"{status!r} (code {rec['exit']['code']}), end time and samples count; the job's train.jsonl "
                "and samples are intact"
            )
        return None


def _wait_for_file(path: Path, seconds: float) -> None:
    """Until `path` exists, at most `seconds` (the scheduler's own decision, written by its
    batch script; see the probe's cancel_mark_wait_s)."""
    end = time.monotonic() + seconds
    while not path.exists() and time.monotonic() < end:
        time.sleep(0.1)
