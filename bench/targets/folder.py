"""Shared base of the targets whose runs live in a folder on this machine (local, container).

Each run is `<runs_dir>/<env>/<run_id>/`: the job writes its record there, `submit.json`
says how it was started, `job.log` holds its output and a `cancelled` marker says it was
stopped on purpose. Listing, the collect preamble (once only, finished runs only, never
over a stray folder) and the cancel marker are the same for both; how a job starts, how
its state is read and what collection adds are each kind's own.
"""

from __future__ import annotations

import json
import os
import time
from abc import abstractmethod
from pathlib import Path
from typing import Any, ClassVar

from bench.envs import REPO_ROOT
from bench.errors import AtlasError
from bench.records.contract import RUN_JSON
from bench.targets.base import RunStatus, Target

SUBMIT_JSON = "submit.json"  # written by submit(): pid or container, times, commit, command
CANCELLED = "cancelled"  # marker file written by cancel()
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
        try:
            return json.loads((self.runs_dir / run_id / SUBMIT_JSON).read_text())
        except (OSError, ValueError):
            return {}

    def was_cancelled(self, run_id: str) -> bool:
        return (self.runs_dir / run_id / CANCELLED).exists()

    def mark_cancelled(self, run_id: str) -> Path:
        run_dir = self.runs_dir / run_id
        if not run_dir.is_dir():
            raise AtlasError(f"no run {run_id!r} in environment {self.env.name}")
        (run_dir / CANCELLED).write_text(f"{time.time()}\n")
        return run_dir

    def list_runs(self, commit: str | None = None) -> list[RunStatus]:
        if not self.runs_dir.is_dir():
            return []
        runs = [
            self.status(p.name) for p in sorted(self.runs_dir.iterdir()) if p.is_dir() and not p.name.startswith(".")
        ]
        return [r for r in runs if not commit or (r.commit or "").startswith(commit)]

    def collect(self, run_id: str, dest: Path) -> Path:
        """Copy a finished run's record into `dest` once; an existing record is never touched."""
        dest = Path(dest)
        if (dest / RUN_JSON).is_file():
            return dest  # collected before: records are immutable
        self.require_finished(self.status(run_id))
        if dest.exists() and any(dest.iterdir()):
            raise AtlasError(
                f"{dest} exists but holds no run.json (an earlier copy by hand?); move it away and collect again"
            )
        if dest.exists():
            dest.rmdir()
        return self.copy_run(run_id, dest)

    @abstractmethod
    def copy_run(self, run_id: str, dest: Path) -> Path:
        """Copy the finished run's record into the fresh `dest` (atomically: records.place)."""
