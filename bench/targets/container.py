"""Container target (kind `container`): the training image under podman on this machine.

It runs the image the MOC BuildConfig builds (the repository's Dockerfile, built here
by `make image`) the way OpenShift would: an arbitrary UID with group 0, CPU and
memory limits in the Kubernetes quantity syntax of the Job (`requests = limits`),
`/dev/shm` sized, the run folder bind-mounted at the Job's `/results/<run_id>`. So
`bench demo` can set bare process, Slurm and container side by side on one machine.
The container's state comes from `podman inspect`; when the container is gone, from
the run record itself.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from bench.environments.schema import QUANTITY, STR
from bench.errors import AtlasError, ConfigError
from bench.records.contract import EXIT_WORDS, RUN_JSON, SKIPPED
from bench.records.jobfiles import copy_record
from bench.records.timeline import absent, mark
from bench.targets import register
from bench.targets.base import JobSpec, RunState, RunStatus
from bench.targets.folder import JOB_LOG, FolderTarget

_CPU = re.compile(r"^(\d+(?:\.\d+)?)(m?)$")
_MEM = re.compile(r"^(\d+)(Ki|Mi|Gi|Ti|k|M|G|T)?$")
_MEM_FACTOR = {
    None: 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}


def cpu_quantity(value: Any) -> float:
    """Kubernetes CPU quantity ("2", "500m", 1.5) -> cores."""
    match = _CPU.match(str(value).strip())
    if not match:
        raise ValueError(f"not a CPU quantity: {value!r} (examples: 2, 1.5, 500m)")
    number = float(match.group(1))
    return number / 1000 if match.group(2) else number


def memory_quantity(value: Any) -> int:
    """Kubernetes memory quantity ("4Gi", "512Mi", 1000000) -> bytes."""
    match = _MEM.match(str(value).strip())
    if not match:
        raise ValueError(f"not a memory quantity: {value!r} (examples: 4Gi, 512Mi)")
    return int(match.group(1)) * _MEM_FACTOR[match.group(2)]


def podman_time(value: str | None) -> float | None:
    """podman's RFC 3339 times with nanoseconds -> Unix seconds; None for the zero time."""
    if not value or value.startswith("0001-01-01"):
        return None
    text = re.sub(r"(\.\d{6})\d+", r"\1", value.strip()).replace("Z", "+00:00")
    text = re.sub(r" ([+-]\d{4}) \w+$", r"\1", text)  # "2026-11-22 02:16:01.1 +0000 UTC" form
    try:
        return datetime.fromisoformat(text.replace(" ", "T", 1)).timestamp()
    except ValueError:
        return None


PODMAN_RESOLUTION_S = 1e-6  # podman's times carry nanoseconds; read to the microsecond


@register("container")
class ContainerTarget(FolderTarget):
    """One container environment: an image, a UID, limits (clusters/<env>/env.yaml)."""

    # Containers on this machine compete for its cores: run them one after another.

    settings_properties: ClassVar[dict[str, Any]] = {
        "image": STR,
        "build_command": STR,
        "user": STR,
        "limits": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"cpu": QUANTITY, "memory": QUANTITY},
        },
        "shm_size": QUANTITY,
        "runs_dir": STR,
        "results_mount": STR,
        "podman": STR,
    }

    def check_settings(self) -> None:
        s, where = self.env.settings, self.env.folder / "env.yaml"
        problems: list[str] = []
        if not isinstance(s.get("image"), str) or not s.get("image"):
            problems.append("'image' must name the image to run, e.g. localhost/atlas-biggan:dev")
        if not re.fullmatch(r"\d+(:\d+)?", str(s.get("user", "1000680000:0"))):
            problems.append(f"'user' must be numeric UID[:GID] like OpenShift's, got {s.get('user')!r}")
        limits = s.get("limits")
        if not isinstance(limits, dict) or set(limits) != {"cpu", "memory"}:
            problems.append("'limits' must be a mapping with exactly cpu and memory (as in the Job's resources.limits)")
        else:
            for key, parse in (("cpu", cpu_quantity), ("memory", memory_quantity)):
                try:
                    if parse(limits[key]) <= 0:
                        raise ValueError(f"{key} must be > 0")
                except ValueError as exc:
                    problems.append(f"limits.{key}: {exc}")
        if "shm_size" in s:
            try:
                memory_quantity(s["shm_size"])
            except ValueError as exc:
                problems.append(f"shm_size: {exc}")
        if problems:
            raise ConfigError(f"{where}: " + "; ".join(problems))

    # -- settings ---------------------------------------------------------------------
    @property
    def podman(self) -> str:
        return str(self.env.get("podman", "podman"))

    @property
    def image(self) -> str:
        return str(self.env.settings["image"])

    def container_name(self, run_id: str) -> str:
        return f"atlas-{self.env.name}-{run_id}"

    def _podman(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        try:
            proc = subprocess.run([self.podman, *args], capture_output=True, text=True, timeout=timeout)
        except FileNotFoundError:
            raise AtlasError(f"{self.env.name}: podman is not installed: run `sudo scripts/podman-setup.sh`") from None
        except subprocess.TimeoutExpired:
            raise AtlasError(f"{self.env.name}: `podman {args[0]}` did not answer in {timeout:.0f} s") from None
        if check and proc.returncode != 0:
            raise AtlasError(f"{self.env.name}: `podman {' '.join(args[:2])}` failed: {proc.stderr.strip()[-400:]}")
        return proc

    def available(self) -> str | None:
        if shutil.which(self.podman) is None:
            return "podman is not installed (run `sudo scripts/podman-setup.sh`)"
        info = self._podman("info", "--format", "{{.Host.OCIRuntime.Name}}", check=False, timeout=60)
        if info.returncode != 0:
            return (
                f"podman cannot run containers here ({info.stderr.strip()[-200:]}); "
                "run `sudo scripts/podman-setup.sh` (runc + ulimits)"
            )
        if self._podman("image", "exists", self.image, check=False).returncode != 0:
            return f"the image {self.image} is not built: run `{self.env.get('build_command', 'make image')}`"
        return None

    # -- the interface -------------------------------------------------------------------
    def run_command(self, job: JobSpec, run_dir: Path, digest: str, commit: str, dirty: str = "") -> list[str]:
        """The `podman run` line: the Job's limits, OpenShift's UID, the record mounted.

        `commit`/`dirty` describe the code inside the image (its labels), which is what
        run.json must record, even when the image is older than the checkout.
        """
        s = self.env.settings
        mount = f"{str(s.get('results_mount', '/results')).rstrip('/')}/{job.run_id}"
        memory = memory_quantity(s["limits"]["memory"])
        env = {
            "ATLAS_RUN_DIR": mount,
            "ATLAS_ENV": self.env.name,
            "ATLAS_EXPERIMENT": job.experiment,
            "ATLAS_RUN_ID": job.run_id,
            "ATLAS_SUBMIT_TIME": repr(time.time()),
            "ATLAS_IMAGE_REF": self.image,
            "ATLAS_IMAGE_DIGEST": digest,
            "ATLAS_JOB_ID": self.container_name(job.run_id),
            **self.job_identity(),
        }
        if commit:
            env["ATLAS_GIT_SHA"] = commit
        if dirty in ("0", "1"):
            env["ATLAS_GIT_DIRTY"] = dirty
        cmd = [
            "run",
            "--detach",
            "--name",
            self.container_name(job.run_id),
            "--user",
            str(s.get("user", "1000680000:0")),
            "--cpus",
            str(cpu_quantity(s["limits"]["cpu"])),
            "--memory",
            f"{memory}b",
            "--memory-swap",
            f"{memory}b",
            "--shm-size",
            f"{memory_quantity(s.get('shm_size', '1Gi'))}b",
            "--volume",
            f"{run_dir}:{mount}",
            "--label",
            f"atlas.run-id={job.run_id}",
            "--label",
            f"atlas.env={self.env.name}",
            "--label",
            f"atlas.commit={job.commit}",
        ]
        for key, value in env.items():
            cmd += ["--env", f"{key}={value}"]
        cmd.append(self.image)
        for item in job.overrides:
            cmd += ["--set", item]
        return cmd

    def submit(self, job: JobSpec) -> RunStatus:
        reason = self.available()
        if reason:
            raise AtlasError(f"{self.env.name}: {reason}")
        run_dir = self.runs_dir / job.run_id
        if run_dir.exists():
            raise AtlasError(f"run {job.run_id} already exists in {run_dir}; pick a new run id")
        run_dir.mkdir(parents=True)
        # The container runs as an arbitrary UID with group 0, as on OpenShift. Group 0 is
        # root's group under root podman and this user's own group under rootless podman
        # (its user namespace maps the container's 0 to us): so the folder is ours, group
        # writable (setgid keeps the group on new files), and closed to everyone else.
        os.chmod(run_dir, 0o2770)
        inspect = json.loads(self._podman("image", "inspect", self.image).stdout)[0]
        digest = inspect.get("Digest") or f"sha256:{inspect.get('Id', '')}"
        labels = inspect.get("Labels") or {}
        commit = labels.get("atlas.commit") or job.commit
        command = self.run_command(job, run_dir, digest, commit, str(labels.get("atlas.dirty", "")))
        submit_time = time.time()
        container_id = self._podman(*command).stdout.strip()
        self.write_submit(
            job,
            submit_time,
            [self.podman, *command],
            container=container_id,
            name=self.container_name(job.run_id),
            image=self.image,
            digest=digest,
        )
        detail = "container started"
        if job.commit and commit and not commit.startswith(job.commit) and not job.commit.startswith(commit):
            detail += f"; the image holds commit {commit[:12]}, not {job.commit[:12]}: rebuild it with `make image`"
        return RunStatus(job.run_id, RunState.PENDING, detail, container_id[:12], job.commit)

    def _inspect(self, run_id: str) -> dict[str, Any] | None:
        proc = self._podman("container", "inspect", self.container_name(run_id), check=False)
        if proc.returncode != 0:
            return None
        return json.loads(proc.stdout)[0]

    def status(self, run_id: str) -> RunStatus:
        run_dir = self.runs_dir / run_id
        if not run_dir.is_dir():
            raise AtlasError(f"no run {run_id!r} in environment {self.env.name} (looked in {run_dir})")
        info = self.submit_info(run_id)
        commit, job_id = info.get("commit"), (info.get("container") or "")[:12] or None
        state = self._inspect(run_id)
        if state is not None:
            st = state.get("State", {})
            status = st.get("Status")
            if status in ("created", "configured", "initialized"):
                return RunStatus(run_id, RunState.PENDING, status, job_id, commit)
            if status in ("running", "paused", "stopping"):
                return RunStatus(run_id, RunState.RUNNING, status, job_id, commit)
            if st.get("OOMKilled"):
                return RunStatus(
                    run_id,
                    RunState.FAILED,
                    f"OOMKilled: the container hit its memory limit "
                    f"({self.env.settings['limits']['memory']}); raise limits.memory in env.yaml",
                    job_id,
                    commit,
                )
            code = st.get("ExitCode")
            why = f"exit code {code}: {EXIT_WORDS.get(code, 'see job.log')}; " if code else ""
            # Exited: the record decides, by the one rule of both folder kinds (folder.py).
            return self.status_from_record(run_id, False, job_id, commit, why=why)
        # The container is gone (removed after collect, or by hand): the record decides.
        return self.status_from_record(run_id, False, job_id, commit)

    def copy_run(self, run_id: str, into: Path) -> dict[str, Any]:
        """The record and podman's log; returns podman's times; then the container is removed.

        The container could write its run folder, so nothing of ours is written there:
        podman's log goes straight into `into` (collect's own fresh folder), and the record
        files are copied without following links (`jobfiles.copy_record`).
        """
        src = self.runs_dir / run_id
        state = self._inspect(run_id)
        skipped = copy_record(src, into)
        if not (Path(into) / RUN_JSON).is_file():
            name = self.container_name(run_id)
            raise AtlasError(f"run {run_id} left no {RUN_JSON} in {src}; see `podman logs {name}`")
        if state is not None:
            fd = os.open(Path(into) / JOB_LOG, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "wb") as log:  # the job's stdout and stderr, interleaved
                subprocess.run(
                    [self.podman, "logs", self.container_name(run_id)],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    timeout=120,
                    check=False,
                )
        info = self.submit_info(run_id)
        sched: dict[str, Any] = {
            "kind": "container",
            "job_id": (info.get("container") or "")[:12] or None,
            "submit_time": info.get("submit_time"),
            SKIPPED: skipped,
        }
        if state is not None:
            sched["start_time"] = podman_time(state.get("State", {}).get("StartedAt"))
            sched["end_time"] = podman_time(state.get("State", {}).get("FinishedAt"))
            sched["created_time"] = podman_time(state.get("Created"))  # the timeline's accepted mark
            self._podman("rm", "--force", self.container_name(run_id), check=False)
        return sched

    def timeline_marks(self, run_id: str, facts: dict[str, Any]) -> dict[str, dict]:
        """accepted: podman created the container; granted: it started (`podman inspect`
        Created and State.StartedAt, kept by copy_run since the container is removed)."""
        marks = super().timeline_marks(run_id, facts)
        for name, key in (("accepted", "created_time"), ("granted", "start_time")):
            found = mark(facts.get(key), "podman", PODMAN_RESOLUTION_S)
            if found is not None:
                marks[name] = found
        marks["pull_start"] = absent("no pull: the image is built on this machine (make image)")
        return marks

    def cancel(self, run_id: str) -> None:
        """SIGTERM (podman stop): the recorder forwards it, the workload checkpoints, exits 75."""
        self.mark_cancelled(run_id)
        if self._inspect(run_id) is not None:
            self._podman("stop", "--time", "120", self.container_name(run_id), check=False, timeout=180)
