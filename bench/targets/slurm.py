"""The `slurm` target: runs reach a Slurm cluster through the Ansible playbooks in ansible/.

Python drives Ansible only through ansible-runner's API, so the playbooks stay plain
Ansible that a user can run with `ansible-playbook` too (see ansible/README.md). The
cluster is named by `clusters/<env>/`: `env.yaml` (Slurm request, runtime, data path)
and an Ansible inventory beside it whose group_vars say where code and runs live.

Every value bench passes to Ansible that holds a Jinja delimiter is marked `!unsafe`, so a hostile env name, branch
or override (`x; touch /tmp/pwned`, `$(...)`, `{{ lookup('pipe', ...) }}`) stays text:
Ansible does not template it and the batch script quotes it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

import yaml

from bench.atomic_files import write_bytes_atomic
from bench.environments.limits import slurm_problems
from bench.environments.load import REPO_ROOT, Environment
from bench.environments.schema import NON_NEG_INT, STR
from bench.errors import AtlasError, ConfigError
from bench.records.contract import EXIT_PREEMPTED
from bench.records.timeline import pushed_at
from bench.targets import register, slurm_accounting
from bench.targets.base import JobSpec, RunState, RunStatus, Target
from bench.targets.playbook_run import command_timeout_s, run_playbook
from bench.targets.slurm_command import job_variables
from bench.targets.slurm_timeline import SBATCH_TASK, slurm_marks, task_end_time

PLAYBOOKS = REPO_ROOT / "ansible"
SLURM_TIMEOUT_ENV = "ATLAS_SLURM_TIMEOUT_S"  # seconds each squeue/sacct call may take (default 60)
# `bench run` waits with ansible/watch.yml: one playbook run waits on the login node for up
# to LONG_POLL_S, asking squeue and sacct -c every `atlas_watch_poll_s` seconds (the
# cluster's group_vars; the role's default 5), and returns on a change.
LONG_POLL_S = 30.0
LOCAL_SLURM_SCRIPT = REPO_ROOT / "scripts" / "local-slurm.sh"
# A local note of what this machine submitted (commit, job id); the cluster's run
# directories are the truth that status/list/collect read.
STATE_DIR = Path(os.environ.get("ATLAS_SLURM_STATE_DIR") or REPO_ROOT / ".slurm" / "ledger")

SLURM_STATES: dict[str, RunState] = {
    "PENDING": RunState.PENDING,
    "CONFIGURING": RunState.PENDING,
    "REQUEUED": RunState.PENDING,
    "REQUEUE_HOLD": RunState.PENDING,
    "REQUEUE_FED": RunState.PENDING,
    "RESV_DEL_HOLD": RunState.PENDING,
    "RUNNING": RunState.RUNNING,
    "COMPLETING": RunState.RUNNING,
    "SUSPENDED": RunState.RUNNING,
    "STAGE_OUT": RunState.RUNNING,
    "SIGNALING": RunState.RUNNING,
    "RESIZING": RunState.RUNNING,
    "COMPLETED": RunState.COMPLETED,
    "CANCELLED": RunState.CANCELLED,
    "FAILED": RunState.FAILED,
    "TIMEOUT": RunState.FAILED,
    "NODE_FAIL": RunState.FAILED,
    "OUT_OF_MEMORY": RunState.FAILED,
    "BOOT_FAIL": RunState.FAILED,
    "DEADLINE": RunState.FAILED,
    "PREEMPTED": RunState.FAILED,
    "SPECIAL_EXIT": RunState.FAILED,
    "REVOKED": RunState.FAILED,
}


class _Unsafe(str):
    """A string Ansible must never template: dumped with YAML's `!unsafe` tag."""


class _UnsafeDumper(yaml.SafeDumper):
    pass


_UnsafeDumper.add_representer(_Unsafe, lambda dumper, value: dumper.represent_scalar("!unsafe", str(value), style='"'))


def _unsafe(value: Any) -> Any:
    if isinstance(value, str):
        # Only Jinja delimiters can be templated. Tag only those strings: Ansible's `!unsafe`
        # re-resolves the scalar (`!unsafe ""` reads as null, `"12:00:00"` as 43200).
        return _Unsafe(value) if "{" in value else value
    if isinstance(value, dict):
        return {str(k): _unsafe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_unsafe(v) for v in value]
    return value


def ansible_variables(env_name: str, settings: dict[str, Any]) -> dict[str, Any]:
    """The env.yaml settings the playbooks read, each under an `atlas_` name.

    Only these reach Ansible (as extra vars, the highest precedence): a key of env.yaml
    can never set one of Ansible's own variables (`ansible_ssh_common_args`, ...). The
    declared `shape:` seeds the Slurm request's nodes and GPUs per node (the batch script
    requests the shape; `slurm:` may only agree with it, SlurmTarget.check_settings).
    """
    slurm = dict(settings.get("slurm") or {})
    shape = settings.get("shape")
    if isinstance(shape, dict):
        slurm = {**{k: shape[k] for k in ("nodes", "gpus_per_node") if k in shape}, **slurm}
    return {
        "atlas_env_name": env_name,
        "atlas_env_slurm": slurm,
        "atlas_env_runtime": dict(settings.get("runtime") or {}),
        "atlas_env_hardware": dict(settings.get("hardware") or {}),
        "atlas_data_path": str(settings.get("data_path") or ""),
    }


def extravars_yaml(extravars: dict[str, Any]) -> str:
    """YAML for ansible-runner's env/extravars, every templatable string tagged `!unsafe`."""
    return yaml.dump(_unsafe(extravars), Dumper=_UnsafeDumper, default_flow_style=False, sort_keys=True)


def map_state(slurm_state: str) -> RunState:
    """Slurm's state of the run's last job (`CANCELLED by 0` included), as a RunState."""
    base = (slurm_state or "").split()[0].rstrip("+") if slurm_state else ""
    return SLURM_STATES.get(base, RunState.UNKNOWN)


def user_env() -> dict[str, str]:
    """USER and LOGNAME for Ansible, which asks for the user name and fails without one
    (a container with an arbitrary UID, cron, a CI step with a scrubbed environment)."""
    name = os.environ.get("USER") or os.environ.get("LOGNAME")
    if not name:
        try:
            import pwd

            name = pwd.getpwuid(os.getuid()).pw_name
        except (ImportError, KeyError):
            name = f"uid{os.getuid()}"
    return {"USER": name, "LOGNAME": name}


_SLURM_SECTION = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "partition": STR,
        "nodes": NON_NEG_INT,
        "gpus_per_node": NON_NEG_INT,
        "ntasks_per_node": NON_NEG_INT,
        "cpus_per_task": NON_NEG_INT,
        "exclusive": {"type": "boolean"},
        "time_limit": STR,
        "mem": STR,
        "signal": STR,
        "max_segments": NON_NEG_INT,
        "rdzv_port": {"type": "integer", "minimum": 1, "maximum": 65535},
    },
}
_RUNTIME_SECTION = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "mode": {"enum": ["venv", "conda", "singularity"]},
        "python": STR,
        "modules": {"type": "array", "items": STR},
        "conda_setup": STR,
        "conda_env": STR,
        "singularity_image": STR,
        "singularity_binds": {"type": "array", "items": STR},
    },
}


@register("slurm")
class SlurmTarget(Target):
    """Submit, watch, collect and cancel runs on a Slurm cluster via ansible/ playbooks."""

    extras: ClassVar[str] = "slurm"
    ci_setup: ClassVar[str] = "ci-ssh"
    job_scheduler: ClassVar[str] = "slurm"
    settings_properties: ClassVar[dict[str, Any]] = {
        "login_host": STR,
        "inventory": STR,
        "data_path": STR,
        "slurm": _SLURM_SECTION,
        "runtime": _RUNTIME_SECTION,
    }

    long_poll_s: ClassVar[float] = LONG_POLL_S

    def __init__(self, env: Environment) -> None:
        super().__init__(env)
        self.repo: Path = REPO_ROOT  # whose commits are archived to the cluster
        self.state_dir: Path = STATE_DIR / re.sub(r"[^A-Za-z0-9._-]", "_", env.name)
        # A local single-node Slurm shares this machine's few cores: `bench run` then
        # submits its runs one after another instead of all at once.
        self.runs_share_host: bool = bool(env.get("local"))

    # -- configuration -------------------------------------------------------------
    @property
    def inventory(self) -> Path:
        return self.env.folder / str(self.env.get("inventory", "inventory.yml"))

    def login_host(self) -> str:
        """The host CI's SSH set-up trusts: the first `slurm_login` host of the inventory."""
        try:
            data = yaml.safe_load(self.inventory.read_text()) or {}
            hosts = (data.get("slurm_login") or {}).get("hosts") or {}
            name, host_vars = next(iter(hosts.items()))
        except (OSError, yaml.YAMLError, AttributeError, StopIteration) as exc:
            raise ConfigError(f"{self.inventory}: no host in group slurm_login ({exc or 'empty'})") from None
        return str((host_vars or {}).get("ansible_host") or name)

    def check_settings(self) -> None:
        where = f"{self.env.folder}/env.yaml"
        problems: list[str] = []
        inventory = self.env.folder / str(self.env.get("inventory", "inventory.yml"))
        if not inventory.is_file():
            problems.append(f"inventory: {inventory} does not exist (an Ansible inventory with group slurm_login)")
        slurm = self.env.get("slurm", {})
        if not isinstance(slurm, dict):
            problems.append("slurm: must be a mapping (partition, nodes, gpus_per_node, time_limit, ...)")
            slurm = {}
        problems.extend(slurm_problems(slurm))  # what sbatch would refuse later (bench.environments.limits)
        shape = self.env.get("shape")
        for key in ("nodes", "gpus_per_node"):  # one shape: env.yaml's `shape:` and the sbatch request agree
            if isinstance(shape, dict) and key in shape and key in slurm and shape[key] != slurm[key]:
                problems.append(
                    f"slurm.{key} ({slurm[key]!r}) differs from shape.{key} ({shape[key]!r}): "
                    f"make them the same, or drop slurm.{key} to take the shape's"
                )
        if "exclusive" in slurm and not isinstance(slurm["exclusive"], bool):
            problems.append(f"slurm.exclusive: must be true or false, got {slurm['exclusive']!r}")
        runtime = self.env.get("runtime", {})
        if not isinstance(runtime, dict):
            problems.append("runtime: must be a mapping with mode: venv, conda or singularity")
        elif runtime.get("mode", "venv") not in ("venv", "conda", "singularity"):
            problems.append(f"runtime.mode: must be venv, conda or singularity, got {runtime.get('mode')!r}")
        elif runtime.get("mode") == "conda" and not (runtime.get("conda_setup") and runtime.get("conda_env")):
            problems.append("runtime: mode conda needs conda_setup (path of conda.sh) and conda_env")
        elif runtime.get("mode") == "singularity" and not runtime.get("singularity_image"):
            problems.append("runtime: mode singularity needs singularity_image (a ppc64le .sif path)")
        if problems:
            raise ConfigError(f"{where}: " + "; ".join(problems))

    def available(self) -> str | None:
        try:
            import ansible_runner  # noqa: F401
        except ModuleNotFoundError:
            return "ansible-runner is not installed: run `make setup` (extra `slurm`)"
        if not self.env.get("local"):
            return None
        try:
            proc = subprocess.run([str(LOCAL_SLURM_SCRIPT), "status"], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"cannot ask {LOCAL_SLURM_SCRIPT} whether the local Slurm runs: {exc}"
        if proc.returncode != 0:
            return "the local Slurm is not running: start it with `make slurm-up` (scripts/local-slurm.sh up, as root)"
        return None

    # -- Ansible -------------------------------------------------------------------
    def ansible_variables(self) -> dict[str, Any]:
        return ansible_variables(self.env.name, self.env.settings)

    def _run(self, playbook: str, extravars: dict[str, Any], timeout_s: int = 600) -> dict[str, Any]:
        """Run one playbook; return its set_stats data, or raise AtlasError naming the failed task."""
        return self._run_events(playbook, extravars, timeout_s)[0]

    def _run_events(
        self, playbook: str, extravars: dict[str, Any], timeout_s: int = 600
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """`_run`, with ansible-runner's events too (their times are timeline marks)."""
        variables = self.ansible_variables()
        variables.update(extravars)
        bin_dir = str(Path(sys.executable).parent)
        envvars = {
            **user_env(),
            "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_RETRY_FILES_ENABLED": "0",
            "ANSIBLE_LOCALHOST_WARNING": "0",
            "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0",
        }
        variables["atlas_slurm_timeout_s"] = int(command_timeout_s(SLURM_TIMEOUT_ENV, 60))
        status, events = run_playbook(
            PLAYBOOKS, playbook, str(self.inventory), envvars, extravars_yaml(variables), timeout_s
        )
        stats: dict[str, Any] = {}
        failures: list[dict[str, Any]] = []
        for event in events:
            data = event.get("event_data", {})
            if event.get("event") == "playbook_on_stats":
                stats = dict(data.get("artifact_data") or {})
            elif event.get("event") in ("runner_on_failed", "runner_on_unreachable") and not data.get("ignore_errors"):
                failures.append(data)
        if status == "successful" and not failures:
            return stats, events
        raise AtlasError(self._failure_message(playbook, status, failures, events))

    def _failure_message(
        self, playbook: str, status: str, failures: list[dict[str, Any]], events: list[dict[str, Any]]
    ) -> str:
        hint = (
            f"check that the cluster answers (`ansible -i {self.inventory} slurm_login -m ping`)"
            " and that Slurm runs there (`sinfo`)"
        )
        if self.env.get("local"):
            hint = "check the local Slurm (`scripts/local-slurm.sh status`; start it with `make slurm-up`)"
        if not failures:
            tail = "".join(e.get("stdout", "") + "\n" for e in events[-5:]).strip()
            return (
                f"{self.env.name}: ansible/{playbook} ended with status {status!r}: {tail[-800:]}\n"
                f"What to check: {hint}"
            )
        data = failures[0]
        res = data.get("res") or {}
        if str(data.get("task", "")).startswith(("Validate", "Check where", "Fail when the commit")):
            hint = f"fix the value named above (the run's arguments or {self.env.folder}/env.yaml)"
        words = [str(res.get(k)).strip() for k in ("msg", "stderr", "module_stderr") if res.get(k)]
        if res.get("assertion"):
            words.append(f"failed check: {res['assertion']}")
        message = "; ".join(dict.fromkeys(w for w in words if w)) or json.dumps(res)[:800]
        return (
            f"{self.env.name}: Ansible task {data.get('task', '?')!r} of ansible/{playbook} failed "
            f"on {data.get('host', '?')}: {message[-1500:]}\nWhat to check: {hint}"
        )

    # -- bookkeeping ---------------------------------------------------------------
    def _ledger(self, run_id: str) -> Path:
        return self.state_dir / f"{run_id}.json"

    def _resolve_commit(self, commit: str) -> str:
        try:
            proc = subprocess.run(
                [
                    "git",
                    "-C",
                    str(self.repo),
                    "rev-parse",
                    "--verify",
                    "--quiet",
                    "--end-of-options",
                    f"{commit}^{{commit}}",
                ],
                capture_output=True,
                text=True,
                timeout=30,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise AtlasError(f"cannot run git in {self.repo}: {exc}") from exc
        sha = proc.stdout.strip()
        if proc.returncode != 0 or len(sha) != 40:
            raise AtlasError(
                f"commit {commit!r} is not in {self.repo}: commit your change (the cluster "
                "runs `git archive` of a commit, never the working tree)"
            )
        return sha

    # -- Target --------------------------------------------------------------------
    def submit(self, job: JobSpec) -> RunStatus:
        sha = self._resolve_commit(job.commit)
        pushed = pushed_at()  # before anything is submitted: a bad ATLAS_PUSHED_AT submits nothing
        started = time.time()
        settings = self.ansible_variables()
        command = job_variables(  # the batch script runs this line as is (bench/targets/slurm_command.py)
            self.env.name, job, settings["atlas_env_slurm"], settings["atlas_env_hardware"], self.recorder_options()
        )
        stats, events = self._run_events(
            "submit.yml",
            {
                "atlas_run_id": job.run_id,
                "atlas_commit": sha,
                "atlas_experiment": job.experiment,
                "atlas_overrides": list(job.overrides),
                "atlas_repo": str(self.repo),
                **command,
            },
        )
        job_id = str(stats.get("job_id") or "")
        self.state_dir.mkdir(parents=True, exist_ok=True)
        entry = {
            "run_id": job.run_id,
            "commit": sha,
            "experiment": job.experiment,
            "overrides": list(job.overrides),
            "job_id": job_id,
            "submitted_at": time.time(),
            "run_dir": stats.get("run_dir"),
            # timeline marks: bench's submit began (its clock), sbatch returned (ansible-runner's event), the push
            "submit_started_at": started,
            "sbatch_at": task_end_time(events, SBATCH_TASK),
            "pushed_at": pushed,
        }
        write_bytes_atomic(self._ledger(job.run_id), (json.dumps(entry, indent=2) + "\n").encode())
        return RunStatus(
            job.run_id, RunState.PENDING, f"submitted as Slurm job {job_id}", scheduler_job_id=job_id, commit=sha
        )

    def _status_from(self, run_id: str, stats: dict[str, Any]) -> RunStatus:
        jobs = stats.get("jobs") or []
        commit = stats.get("commit") or self._commit_of(run_id)
        progress = str(stats.get("progress") or "")  # what watch.yml compares (atlas_slurm_jobs `progress`)
        if not jobs:
            detail = str(stats.get("detail") or "no Slurm job recorded")
            return RunStatus(run_id, RunState.UNKNOWN, detail, commit=commit, extra={"slurm_progress": progress})
        last = jobs[-1]
        exit_code = last.get("exit_code")
        state = map_state(str(last.get("state", "")))
        detail = str(stats.get("detail") or last.get("reason") or "")
        if state is RunState.COMPLETED and exit_code not in (None, 0):
            state = RunState.FAILED
        if state is RunState.FAILED and exit_code == EXIT_PREEMPTED:
            detail = (
                "checkpointed (exit 75) but not resubmitted: max_segments reached or sbatch "
                "failed; submit again with the same run dir to resume"
            )
        if len(jobs) > 1 and not state.finished:
            detail = f"segment {len(jobs)} (resumed after a checkpoint); {detail}".rstrip("; ")
        if state is RunState.FAILED and stats.get("log_tail"):
            detail = f"{detail}; last lines of slurm-{last['job_id']}.out:\n{stats['log_tail']}"
        extra = {
            "slurm_state": str(last.get("state", "")),
            "job_ids": ",".join(str(j["job_id"]) for j in jobs),
            "slurm_progress": progress,
        }
        return RunStatus(run_id, state, detail, scheduler_job_id=str(jobs[0]["job_id"]), commit=commit, extra=extra)

    def _commit_of(self, run_id: str) -> str | None:
        try:
            return json.loads(self._ledger(run_id).read_text()).get("commit")
        except (OSError, ValueError):
            return None

    def status(self, run_id: str) -> RunStatus:
        return self._status_from(run_id, self._run("status.yml", {"atlas_run_id": run_id}))

    def watch(self, known: dict[str, RunStatus | None], wait_s: float) -> dict[str, RunStatus]:
        """One ansible/watch.yml run: the login node asks squeue and sacct -c every
        `atlas_watch_poll_s` (group_vars) until a run's progress differs from the one in
        `known`, or one finished, or `wait_s` passed (`bench status` stays one immediate status.yml)."""
        runs = {run_id: (st.extra.get("slurm_progress", "") if st else "") for run_id, st in known.items()}
        variables = {"atlas_runs": runs, "atlas_wait_s": round(max(0.0, wait_s), 1)}
        stats = self._run("watch.yml", variables, timeout_s=int(wait_s) + 600)
        found = {str(run["run_id"]): self._status_from(str(run["run_id"]), run) for run in stats.get("runs") or []}
        missing = "not in ansible/watch.yml's report"
        return {run_id: found.get(run_id) or RunStatus(run_id, RunState.UNKNOWN, missing) for run_id in known}

    def list_runs(self, commit: str | None = None) -> list[RunStatus]:
        """The runs found on the cluster itself (not only those this machine submitted)."""
        if commit and not re.fullmatch(r"[0-9a-f]{1,40}", commit):
            commit = self._resolve_commit(commit)
        stats = self._run("list.yml", {"atlas_commit": commit or ""})  # one Ansible pass for all
        return [self._status_from(str(run["run_id"]), run) for run in stats.get("runs") or []]

    def fetch(self, run_id: str, into: Path, finished: RunStatus | None = None) -> dict[str, Any]:
        """ansible/collect.yml copies the record files; Slurm's accounting gives the times and,
        where the site accounts them, a second source for GPU utilisation and energy. A
        finished status handed in saves the status playbook (one Ansible run, seconds)."""
        self.finished_status(run_id, finished)
        stats = self._run(
            "collect.yml",
            {
                "atlas_run_id": run_id,
                "atlas_dest": str(Path(into).resolve()),
                "atlas_wait_s": 0,
                "atlas_poll_s": 1,
                "atlas_sacct_fields": slurm_accounting.SACCT_FIELDS,
            },
        )
        sched = dict(stats["scheduler"]) if isinstance(stats.get("scheduler"), dict) else {}
        sched["accounting"] = slurm_accounting.from_sacct(stats.get("accounting"))
        return sched

    def timeline_marks(self, run_id: str, facts: dict[str, Any]) -> dict[str, Any]:
        """From this machine's ledger and Slurm's accounting (bench/targets/slurm_timeline.py)."""
        try:
            ledger = json.loads(self._ledger(run_id).read_text())
        except (OSError, ValueError):
            ledger = None
        return slurm_marks(run_id, ledger if isinstance(ledger, dict) else None, facts)

    def cancel(self, run_id: str) -> None:
        self._run("cancel.yml", {"atlas_run_id": run_id})

    def stage_data(self, spec: Any, timeout_s: float = 3600) -> str:
        """Slurm data is staged on the cluster's file system: check the file is there, same sha256."""
        base = self.env.get("data_path")
        path = spec.file if spec.file.startswith("/") else f"{str(base or '').rstrip('/')}/{spec.file}"
        if not path.startswith("/"):
            raise AtlasError(f"{self.env.name}: data.file {spec.file!r} is relative and env.yaml has no data_path")
        stats = self._run(
            "check-data.yml", {"atlas_data_file": path, "atlas_data_sha256": spec.sha256.lower()}, int(timeout_s)
        )
        return f"already staged: {stats.get('path', path)} on {self.env.name} (sha256 {spec.sha256[:12]}, checked)"
