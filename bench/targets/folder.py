"""Shared base of the targets whose runs live in a folder on this machine (local, container).

Each run is `<runs_dir>/<env>/<run_id>/`: the job writes its record there, `submit.json`
says how it was started, `job.log` holds its output and a `cancelled` marker says it was
stopped on purpose. Listing, submit.json, the state read from the run record, the fetch
preamble (finished runs only; bench.records.place places the record once) and the cancel
marker are the same for both; how a job starts, whether it is still alive and what
collection adds are each kind's own.
"""

from __future__ import annotations

import errno
import json
import os
import time
from abc import abstractmethod
from pathlib import Path
from typing import Any, ClassVar

from bench.environments.load import REPO_ROOT
from bench.errors import AtlasError
from bench.records.contract import (
    CANCEL_MARK,
    EXIT_RUNNING,
    EXIT_WORDS,
    FINISHED_OK,
    RUN_JSON,
    STATUS_PREEMPTED,
    TRAIN_JSONL,
    exit_succeeded,
)
from bench.records.jobfiles import read_json, write_bytes
from bench.records.timeline import HOST_RESOLUTION_S, absent, mark, pushed_at
from bench.targets.base import JobSpec, RunState, RunStatus, Target

SUBMIT_JSON = "submit.json"  # written by submit(): pid or container, times, commit, command
CANCELLED = CANCEL_MARK  # marker file written by cancel(); the recorder and the Slurm script read the same name
JOB_LOG = "job.log"  # the job's stdout + stderr


class FolderTarget(Target):
    """A target whose run folders are on this machine; its runs share this machine's cores."""

    runs_share_host: ClassVar[bool] = True
    runs_dir_variable: ClassVar[str | None] = None  # an environment variable that overrides env.yaml runs_dir

    @property
    def runs_dir(self) -> Path:
        configured = (os.environ.get(self.runs_dir_variable) if self.runs_dir_variable else None) or self.env.get(
            "runs_dir"
        )
        base = Path(configured) if configured else REPO_ROOT / ".atlas" / "runs"
        return (base if base.is_absolute() else REPO_ROOT / base) / self.env.name

    def submit_info(self, run_id: str) -> dict[str, Any]:
        """submit.json, read as a job's file (the job can write its folder): no link followed."""
        try:
            info = read_json(self.runs_dir / run_id / SUBMIT_JSON)
        except (OSError, ValueError):
            return {}
        if not isinstance(info, dict):
            return {}
        if not isinstance(info.get("commit"), (str, type(None))):  # written by the job's side: a str or nothing
            info["commit"] = None
        return info

    def write_submit(self, job: JobSpec, submit_time: float, command: list[str], **facts: Any) -> None:
        """submit.json: how the run was started (the kind's own `facts`: pid, container, image)."""
        info = {
            "run_id": job.run_id,
            **facts,
            "submit_time": submit_time,
            "pushed_at": pushed_at(),  # ATLAS_PUSHED_AT, for the timeline's pushed mark
            "commit": job.commit,
            "experiment": job.experiment,
            "overrides": list(job.overrides),
            "command": command,
        }
        self.write_own(job.run_id, SUBMIT_JSON, (json.dumps(info, indent=2) + "\n").encode())

    def read_record(self, run_id: str) -> dict[str, Any] | None:
        """The run's run.json as the job left it, or None when it is missing or not an object."""
        try:
            record = read_json(self.runs_dir / run_id / RUN_JSON)
        except (OSError, ValueError):
            return None
        return record if isinstance(record, dict) else None

    def status_from_record(
        self, run_id: str, alive: bool, job_id: str | None, commit: str | None, progress: str = "", why: str = ""
    ) -> RunStatus:
        """The run's state from its record and whether its process is `alive`: the one rule of
        both folder kinds (completed = a finished-OK exit status and exit code 0)."""
        run_dir = self.runs_dir / run_id
        record = self.read_record(run_id)
        cancelled = self.was_cancelled(run_id)
        if record is None:
            if alive:
                return RunStatus(run_id, RunState.PENDING, "starting", job_id, commit)
            return RunStatus(
                run_id,
                RunState.CANCELLED if cancelled else RunState.FAILED,
                f"{why}the job ended without writing {RUN_JSON}; see {run_dir / JOB_LOG}",
                job_id,
                commit,
            )
        exit_info = record.get("exit") if isinstance(record.get("exit"), dict) else {}
        state, code = exit_info.get("status"), exit_info.get("code")
        if state == EXIT_RUNNING:
            if alive:
                return RunStatus(run_id, RunState.RUNNING, progress, job_id, commit)
            from bench.records.rebuild import final_stop  # reads train.jsonl (numpy): not for `bench status`

            stop = final_stop(run_dir, record.get("start_time"))
            if stop is not None:  # the recorder's final write was lost; the workload's log says how it ended
                ok = stop.get("status") in FINISHED_OK
                return RunStatus(
                    run_id,
                    RunState.COMPLETED if ok else RunState.FAILED,
                    f"{stop.get('status')} (run.json's final write was lost; collect rebuilds it from {TRAIN_JSONL})"
                    + ("" if ok else self.resume_hint(run_dir, stop.get("status"))),  # the recorder was killed
                    job_id,
                    commit,
                )
            return RunStatus(
                run_id,
                RunState.FAILED,
                f"the recorder died before the job ended (run.json still says running); see {run_dir / JOB_LOG}"
                + self.resume_hint(run_dir, None),
                job_id,
                commit,
            )
        if alive:  # run.json final, process still exiting
            return RunStatus(run_id, RunState.RUNNING, "finishing", job_id, commit)
        words = EXIT_WORDS.get(code) if isinstance(code, int) and state != STATUS_PREEMPTED else None
        detail = f"{state}, exit code {code}" + (f": {words}" if words else "")
        if exit_info.get("signal"):
            detail += f", signal {exit_info['signal']}"
        if cancelled:
            return RunStatus(run_id, RunState.CANCELLED, detail, job_id, commit)
        if exit_succeeded(state, code):
            return RunStatus(run_id, RunState.COMPLETED, detail, job_id, commit)
        return RunStatus(run_id, RunState.FAILED, detail + self.resume_hint(run_dir, state), job_id, commit)

    def resume_hint(self, run_dir: Path, state: str | None) -> str:
        """How to go on with a run that stopped early (a kind that can say more overrides it)."""
        if state == STATUS_PREEMPTED:
            return f" (a checkpoint was saved: run the same command again in {run_dir} to resume)"
        return ""

    def write_own(self, run_id: str, name: str, data: bytes) -> None:
        """Write one of bench's files (submit.json, the cancel marker) into the run folder,
        never through a link the job planted under that name (jobfiles.write_bytes)."""
        try:
            write_bytes(self.runs_dir / run_id / name, data)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.EISDIR, errno.ENOTDIR, errno.EEXIST):
                raise
            raise AtlasError(
                f"{self.runs_dir / run_id / name}: is a link or a folder, not bench's file ({exc.strerror}); "
                "not followed: remove it and try again"
            ) from None

    def was_cancelled(self, run_id: str) -> bool:
        return (self.runs_dir / run_id / CANCELLED).exists()

    def mark_cancelled(self, run_id: str) -> Path:
        run_dir = self.runs_dir / run_id
        if not run_dir.is_dir():
            raise AtlasError(f"no run {run_id!r} in environment {self.env.name}")
        self.write_own(run_id, CANCELLED, f"{time.time()}\n".encode())
        return run_dir

    def list_runs(self, commit: str | None = None) -> list[RunStatus]:
        if not self.runs_dir.is_dir():
            return []
        runs = [
            self.status(p.name)
            for p in sorted(self.runs_dir.iterdir())
            if p.is_dir() and not p.is_symlink() and not p.name.startswith(".")  # a link is no run of this env
        ]
        return [r for r in runs if not commit or (r.commit or "").startswith(commit)]

    def fetch(self, run_id: str, into: Path, finished: RunStatus | None = None) -> dict[str, Any]:
        """Copy a finished run's record files into `into`; return the scheduler facts."""
        if (self.runs_dir / run_id).is_symlink():
            raise AtlasError(f"{self.runs_dir / run_id} is a link, not a run folder: not followed, not collected")
        self.finished_status(run_id, finished)
        return self.copy_run(run_id, Path(into))

    def timeline_marks(self, run_id: str, facts: dict[str, Any]) -> dict[str, dict]:
        """pushed and submitted, from submit.json (this machine's clock); a kind adds the rest."""
        info = self.submit_info(run_id)
        marks = {
            "pushed": mark(info.get("pushed_at"), "bench-host", HOST_RESOLUTION_S),
            "submitted": mark(info.get("submit_time"), "bench-host", HOST_RESOLUTION_S),
            "staged": absent("no staging step: the job reads this machine's files"),
        }
        return {name: m for name, m in marks.items() if m is not None}

    @abstractmethod
    def copy_run(self, run_id: str, into: Path) -> dict[str, Any]:
        """Copy the finished run's record files into the empty folder `into` (bench.records.place
        places it) and return what this kind knows of the scheduler: submit/start/end, job id."""
