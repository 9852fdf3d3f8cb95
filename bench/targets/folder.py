"""Shared base of the targets whose runs live in a folder on this machine (local, container).

Each run is `<runs_dir>/<env>/<run_id>/`: the job writes its record there, `submit.json`
says how it was started, `job.log` holds its output and a `cancelled` marker says it was
stopped on purpose. Listing, the fetch preamble (finished runs only; bench.records.place
places the record once) and the cancel marker are the same for both; how a job starts, how
its state is read and what collection adds are each kind's own.
"""

from __future__ import annotations

import errno
import os
import time
from abc import abstractmethod
from pathlib import Path
from typing import Any, ClassVar

from bench.envs import REPO_ROOT
from bench.errors import AtlasError
from bench.records.contract import CANCEL_MARK
from bench.records.jobfiles import read_json, write_bytes
from bench.targets.base import RunStatus, Target

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

    def fetch(self, run_id: str, into: Path) -> dict[str, Any]:
        """Copy a finished run's record files into `into`; return the scheduler facts."""
        if (self.runs_dir / run_id).is_symlink():
            raise AtlasError(f"{self.runs_dir / run_id} is a link, not a run folder: not followed, not collected")
        self.require_finished(self.status(run_id))
        return self.copy_run(run_id, Path(into))

    @abstractmethod
    def copy_run(self, run_id: str, into: Path) -> dict[str, Any]:
        """Copy the finished run's record files into the empty folder `into` (bench.records.place
        places it) and return what this kind knows of the scheduler: submit/start/end, job id."""
