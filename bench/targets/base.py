"""The Target plug-in interface: how `bench` reaches one kind of environment.

A target knows how to start the wrapped job (`bench record -- python -m
workflows.biggan ...`) somewhere, ask how it is doing, fetch its run record files, and
stop it. It never interprets or writes the record: collection places it
(bench.records.place), compare reads it.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from bench.environments.load import Environment
from bench.errors import AtlasError, ConfigError


class RunState(str, enum.Enum):
    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    UNKNOWN = "unknown"

    @property
    def finished(self) -> bool:
        return self in (RunState.COMPLETED, RunState.FAILED, RunState.CANCELLED)


@dataclass(frozen=True)
class JobSpec:
    """What to run: the same on every environment, so runs are comparable."""

    run_id: str
    experiment: str
    commit: str
    overrides: tuple[str, ...] = ()  # KEY=VALUE, passed to the workload's --set

    def __post_init__(self) -> None:
        from bench.names import check_name

        check_name(self.run_id, "run id")  # a folder, a label and a container name on every target
        check_name(self.experiment, "experiment")


@dataclass
class RunStatus:
    run_id: str
    state: RunState
    detail: str = ""  # scheduler's words: reason pending, exit code, error
    scheduler_job_id: str | None = None
    commit: str | None = None
    extra: dict[str, str] = field(default_factory=dict)


class Target(ABC):
    """One environment kind. Subclasses register with `@register("kind")`."""

    kind: ClassVar[str]
    # True when runs execute on the machine `bench` runs on (local, container): `bench
    # run` then runs them one after another so they do not compete for its cores.
    runs_share_host: ClassVar[bool] = False
    # The project's optional dependencies this kind needs (pyproject extras, comma-separated),
    # and the `make` target that writes its CI credentials (""  = none): `bench envs --json`
    # hands both to CI's deploy and collect matrix.
    extras: ClassVar[str] = ""
    ci_setup: ClassVar[str] = ""
    # The kind's own env.yaml keys, as JSON Schema properties (bench.environments.schema adds the
    # common ones and refuses every other key): a kind declares its keys here, nowhere else.
    settings_properties: ClassVar[dict[str, Any]] = {}
    # The scheduler the job runs under, passed into the job with the kind so that the
    # recorder reads the right in-job facts (bench/in_job/scheduler/<name>.py).
    job_scheduler: ClassVar[str] = "plain"
    # Where `bench stage-data` puts the training file: on a volume mounted into the job
    # (True: data.file is a path inside data.mount) or on the nodes' own file systems
    # (False: data.file may name a pre-staged absolute path). bench.stage_data checks
    # data.file by this, never by the kind's name.
    data_on_volume: ClassVar[bool] = False
    # One line `bench validate` prints under an env of this kind that is valid (e.g. that a
    # path it would take is legacy, and what replaces it); empty: nothing to say.
    validate_note: ClassVar[str] = ""
    # How long one `watch` may wait on the scheduler's side for a run's state to change
    # (seconds). 0: this kind asks at once, and `bench run`'s wait loop rests between rounds.
    long_poll_s: ClassVar[float] = 0.0

    def __init__(self, env: Environment) -> None:
        from bench.environments.schema import settings_problems
        from bench.names import check_name

        check_name(env.name, "environment")  # a folder, a label, a shell word: whoever built `env`
        problems = settings_problems(env.settings, env.kind, self.settings_properties, keys_only=True)
        if problems:
            raise ConfigError(f"{env.folder / 'env.yaml'}: " + "; ".join(problems))
        self.env = env
        self.check_settings()

    def check_settings(self) -> None:  # noqa: B027 (an optional hook: most kinds accept the defaults)
        """Raise ConfigError naming every wrong key of `env.yaml`; default: accept."""

    def job_identity(self) -> dict[str, str]:
        """What the job is told about who started it: ATLAS_KIND and ATLAS_SCHEDULER (`bench
        record` reads them, or the same as --kind / --scheduler options)."""
        return {"ATLAS_KIND": self.kind, "ATLAS_SCHEDULER": self.job_scheduler}

    def recorder_options(self) -> tuple[str, ...]:
        """`job_identity` as `bench record` options, for targets that build the command line."""
        ident = self.job_identity()
        return ("--kind", ident["ATLAS_KIND"], "--scheduler", ident["ATLAS_SCHEDULER"])

    def login_host(self) -> str | None:
        """The host CI's SSH set-up must trust (`bench envs --host`); None: this kind needs no SSH."""
        return None

    def check_files(self) -> None:  # noqa: B027 (an optional hook)
        """Check the kind-specific files beside env.yaml (manifests, inventory).

        Slower than check_settings (may render templates), so only `bench validate`
        calls it. Raise ConfigError listing every problem; default: nothing to check.
        """

    def available(self) -> str | None:
        """None when this environment can be used from here, else the reason it can't.

        `bench demo` runs every env whose `env.yaml` says `local: true` and whose target
        is available, and prints the reason for each one it skips.
        """
        return None

    @abstractmethod
    def submit(self, job: JobSpec) -> RunStatus:
        """Start the job; return at once (do not wait for training to end)."""

    @abstractmethod
    def status(self, run_id: str) -> RunStatus: ...

    def watch(self, known: dict[str, RunStatus | None], wait_s: float) -> dict[str, RunStatus]:
        """The status of each run of `known`, returned once one differs from the status given
        for it (None: none seen yet) or has finished, or after at most `wait_s` seconds.

        Why: where a status costs a round trip (an Ansible run over SSH), `bench run`'s wait
        loop asks once per change instead of once per poll. Default (`long_poll_s` 0): `status`
        of each, at once."""
        return {run_id: self.status(run_id) for run_id in known}

    @abstractmethod
    def list_runs(self, commit: str | None = None) -> list[RunStatus]:
        """Runs this environment knows of, optionally only those of one commit."""

    @abstractmethod
    def fetch(self, run_id: str, into: Path, finished: RunStatus | None = None) -> dict[str, Any]:
        """Copy the record files of a finished run into `into` (an empty temporary folder)
        and return what the scheduler knows that the job did not (`run.json` `scheduler`
        keys: submit/start/end time, job id; None where unknown). `finished`: the status
        the caller already read and found finished (a finished run stays finished), so a
        kind need not ask its scheduler again (`finished_status`).

        Only `bench.records.place.place_run` calls it: it freezes these facts and the
        environment's into the record and places it, once. A target never writes
        `run.json` and never writes into the results tree.
        """

    def timeline_marks(self, run_id: str, facts: dict[str, Any]) -> dict[str, dict]:
        """The platform's marks of this run's timeline (bench.records.timeline): name ->
        `{"time", "source", "resolution_s"}`, or `{"time": None, "reason": ...}` for a mark
        that does not exist on this kind (its phases are then null with that reason).

        Collection calls it once per run, after `fetch`, with what fetch returned (`facts`).
        The job's own marks (recorder start, workload start, first and last iteration, exit)
        and `collected` are added by collection; a kind gives submitted, accepted, granted,
        staged, pull_start, pulled (and pushed). An AtlasError loses no run: the phases it
        would give are recorded as null with the reason. Default: none known."""
        return {}

    @abstractmethod
    def cancel(self, run_id: str) -> bool | None:
        """Stop the run; False when it was left alone because its record is already final."""

    def stage_data(self, spec: Any, timeout_s: float = 3600) -> str:
        """Put the data file `spec` (bench.stage_data.DataSpec) where this env's jobs read it,
        verified by sha256; return one line saying what was done. Default: not for this kind."""
        raise AtlasError(
            f"{self.env.name}: kind {self.env.kind} has no data staging: its jobs read the data path of this machine"
        )

    def finished_status(self, run_id: str, known: RunStatus | None) -> RunStatus:
        """`known` when it is this run's and finished; else the scheduler is asked (and must say finished)."""
        if known is not None and known.run_id == run_id and known.state.finished:
            return known
        return self.require_finished(self.status(run_id))

    def require_finished(self, status: RunStatus) -> RunStatus:
        """Collect copies finished runs only: a record still being written is not one."""
        if not status.state.finished:
            raise AtlasError(
                f"{self.env.name}: run {status.run_id} is {status.state.value} ({status.detail}); "
                f"collect it once it has finished (`bench status --env {self.env.name}`)"
            )
        return status


def new_run_id(commit: str, now: float | None = None) -> str:
    """Sortable, unique, and safe as a file name, a Slurm job name and a k8s label."""
    import secrets
    import time

    stamp = time.strftime("%Y%m%dt%H%M%S", time.gmtime(now if now is not None else time.time()))
    return f"{stamp}-{(commit or 'nocommit')[:8]}-{secrets.token_hex(2)}"
