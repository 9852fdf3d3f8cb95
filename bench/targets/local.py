"""The `local` target: the recorded job as a detached subprocess on this machine.

Run folders live under `<repo>/.atlas/runs/<env>/<run_id>/` (ignored by git; env.yaml
`runs_dir` or the environment variable ATLAS_RUNS_DIR changes it). The job is
`bench record -- python -m workflows.biggan ...`,
started in its own session so it outlives the `bench` process that submitted it;
state is read back from the run record itself (`run.json`), never from memory, so
`bench status` in another shell sees the same thing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

from bench.environments.load import REPO_ROOT
from bench.environments.schema import POSITIVE, STR
from bench.errors import AtlasError, ConfigError
from bench.records.contract import EXIT_RUNNING, RUN_JSON, SKIPPED, TRAIN_JSONL
from bench.records.jobfiles import copy_record, read_json
from bench.records.timeline import HOST_RESOLUTION_S, absent, mark
from bench.targets import register
from bench.targets.base import JobSpec, RunState, RunStatus
from bench.targets.folder import JOB_LOG, SUBMIT_JSON, FolderTarget
from bench.targets.launch import recorded_launch
from bench.targets.process_identity import identity, is_own, signal_own, valid_pid


@register("local")
class LocalTarget(FolderTarget):
    # Runs on this machine compete for its cores: run them one after another.
    runs_dir_variable: ClassVar[str | None] = "ATLAS_RUNS_DIR"
    _children: ClassVar[dict[int, subprocess.Popen[bytes]]] = {}

    settings_properties: ClassVar[dict[str, Any]] = {"runs_dir": STR, "interval_s": POSITIVE}

    def check_settings(self) -> None:
        where = self.env.folder / "env.yaml"
        runs_dir = self.env.get("runs_dir")
        if runs_dir is not None and not isinstance(runs_dir, str):
            raise ConfigError(f"{where}: runs_dir must be a path (string), got {runs_dir!r}")
        interval = self.env.get("interval_s", 1.0)
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) or interval <= 0:
            raise ConfigError(f"{where}: interval_s must be a number of seconds > 0, got {interval!r}")

    def available(self) -> str | None:
        if importlib.util.find_spec("torch") is None:
            return "PyTorch is not installed in this Python (run `make setup`)"
        if not (REPO_ROOT / "workflows" / "biggan" / "__main__.py").is_file():
            return "the workload (workflows/biggan) is not in this checkout"
        return None

    def submit(self, job: JobSpec) -> RunStatus:
        run_dir = self.runs_dir / job.run_id
        if run_dir.exists():
            raise AtlasError(f"run {job.run_id} already exists in {run_dir}; pick a new run id")
        run_dir.mkdir(parents=True)
        interval = self.env.get("interval_s")
        options = (*self.recorder_options(), *((f"--interval={float(interval)}",) if interval else ()))
        command = recorded_launch(self.env.name, job, str(run_dir), python=sys.executable, recorder_options=options)
        submit_time = time.time()
        env = dict(os.environ, ATLAS_SUBMIT_TIME=repr(submit_time), ATLAS_RUN_ID=job.run_id, PYTHONUNBUFFERED="1")
        if re.fullmatch(r"[0-9a-f]{40}", job.commit):
            env["ATLAS_GIT_SHA"] = job.commit  # the commit submitted; the recorder judges dirtiness
        env.pop("ATLAS_GIT_DIRTY", None)
        # the timeline's accepted mark: bench asks for the process. Taken before the spawn, not
        # after: a parent descheduled once Popen returns could read its clock after the child
        # started, and launch (accepted -> the job's start) would come out negative.
        spawned_time = time.time()
        with (run_dir / JOB_LOG).open("wb") as log:
            proc = subprocess.Popen(
                command,
                cwd=REPO_ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self._children[proc.pid] = proc
        # pid identity: checked before any signal
        self.write_submit(job, submit_time, command, spawned_time=spawned_time, **identity(proc.pid))
        return RunStatus(job.run_id, RunState.PENDING, "started", str(proc.pid), job.commit)

    def submit_info(self, run_id: str) -> dict[str, Any]:
        """submit.json with its pid checked: a pid that is not a process id (a text, 10^30,
        -1, 0, 1) is dropped and named in `problem`, so status never crashes on it and cancel
        never signals it (os.kill(-1) would signal every process of the user)."""
        info = super().submit_info(run_id)
        if "pid" in info and valid_pid(info["pid"]) is None:
            info["problem"] = f"{SUBMIT_JSON} pid {str(info['pid'])[:40]!r} is not a process id (an integer > 1)"
            info["pid"] = None
        return info

    def _alive(self, info: dict[str, Any]) -> bool:
        """Is the run's own process (pid, start time, boot: process_identity) alive? A pid
        now owned by another process reads as not alive, so collect does not wait for it."""
        pid = valid_pid(info.get("pid"))
        child = self._children.get(pid) if pid is not None else None
        if child is not None:
            return child.poll() is None  # also reaps it, so no zombie lingers
        return is_own(info)

    @staticmethod
    def _progress(run_dir: Path) -> str:
        """'iteration N, X img/s' from the last complete train line (cheap tail read)."""
        path = run_dir / TRAIN_JSONL
        try:
            with path.open("rb") as fh:
                fh.seek(0, os.SEEK_END)
                fh.seek(max(0, fh.tell() - 4096))
                tail = fh.read().split(b"\n")
        except OSError:
            return ""
        for raw in reversed(tail[:-1]):
            try:
                ev = json.loads(raw)
            except ValueError:
                continue
            if ev.get("event") == "train":
                return f"iteration {ev.get('iteration')}, {ev.get('images_per_s')} img/s"
            if ev.get("event") == "run_start":
                return "training started"
        return ""

    def status(self, run_id: str) -> RunStatus:
        run_dir = self.runs_dir / run_id
        if not run_dir.is_dir():
            raise AtlasError(f"no run {run_id!r} in environment {self.env.name} (looked in {run_dir})")
        info = self.submit_info(run_id)
        pid = info.get("pid")
        alive = self._alive(info)
        why = f"{info['problem']}; " if info.get("problem") else ""
        progress = self._progress(run_dir) if alive else ""
        return self.status_from_record(run_id, alive, str(pid) if pid else None, info.get("commit"), progress, why)

    def copy_run(self, run_id: str, into: Path) -> dict[str, Any]:
        """run.json, samples, train.jsonl and job.log; the submit time and pid are ours."""
        skipped = copy_record(self.runs_dir / run_id, into, extra_files=(JOB_LOG,))
        info = self.submit_info(run_id)
        pid = info.get("pid")
        return {
            "kind": self.kind,
            "job_id": str(pid) if pid else None,
            "submit_time": info.get("submit_time"),
            SKIPPED: skipped,
        }

    def timeline_marks(self, run_id: str, facts: dict[str, Any]) -> dict[str, dict]:
        """accepted: bench asked for the process (submit.json); no scheduler grants anything, no image is pulled."""
        marks = super().timeline_marks(run_id, facts)
        accepted = mark(self.submit_info(run_id).get("spawned_time"), "bench-host", HOST_RESOLUTION_S)
        if accepted is not None:
            marks["accepted"] = accepted
        marks["granted"] = absent("no scheduler: the process starts at once")
        marks["pull_start"] = absent("no image: a bare process")
        return marks

    def resume_hint(self, run_dir: Path, state: str | None) -> str:
        return resume_hint(run_dir)

    def cancel(self, run_id: str) -> bool:
        """SIGTERM to the recorder, which forwards it: the workload checkpoints and exits 75.
        A run whose record is final (run.json or train.jsonl's run_stop) is left alone: False.
        The signal goes only to the process submit started (process_identity.signal_own)."""
        run_dir = self.runs_dir / run_id
        if not run_dir.is_dir():
            raise AtlasError(f"no run {run_id!r} in environment {self.env.name}")
        if record_finished(run_dir):
            return False
        info = self.submit_info(run_id)
        self.mark_cancelled(run_id)
        signal_own(info, signal.SIGTERM)
        return True


def resume_hint(run_dir: Path) -> str:
    """How to go on with a killed, failed or preempted run that left a checkpoint: its
    command again (submit.json `command`), which resumes in the same folder."""
    if not any((run_dir / "checkpoints").glob("ckpt-*.pt")):
        return ""
    return (
        f" (a checkpoint was saved in {run_dir / 'checkpoints'}: to resume, run the command in "
        f"{run_dir / SUBMIT_JSON} again from {REPO_ROOT}; it continues from the checkpoint in the same folder)"
    )


def record_finished(run_dir: Path) -> bool:
    """Has the job's record said it ended: run.json's exit status is final, or the last
    event of train.jsonl is a run_stop? Such a run is never signalled nor marked cancelled."""
    try:
        record = read_json(run_dir / RUN_JSON)
    except (OSError, ValueError):
        record = None
    if isinstance(record, dict) and isinstance(record.get("exit"), dict):
        state = record["exit"].get("status")
        if isinstance(state, str) and state != EXIT_RUNNING:
            return True
    return last_event(run_dir) == "run_stop"


def last_event(run_dir: Path) -> str | None:
    """The `event` of the last complete line of train.jsonl (a tail read), or None."""
    try:
        with (run_dir / TRAIN_JSONL).open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 4096))
            tail = fh.read().split(b"\n")
    except OSError:
        return None
    for raw in reversed(tail[:-1]):
        try:
            ev = json.loads(raw)
        except ValueError:
            continue
        if isinstance(ev, dict) and isinstance(ev.get("event"), str):
            return ev["event"]
    return None
