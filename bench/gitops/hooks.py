"""Local GitOps: `git push` to a bare repository runs the local environments.

`install` writes a post-receive hook into a bare repository. For every push to the
watched branch (except report commits, which carry `[skip ci]`, as on GitHub), the hook
runs `bench hooks received`, which does what CI does for a commit, with the same
commands: clone the bare repository at the pushed sha into a scratch folder, `bench run`
each local environment there (the pushed code runs, not the installed one), keep the
run records on the bare repository's `results` branch (`bench archive`), `bench
report`, and `bench publish` the report back to the bare repository. It prints the time
from the push reaching the repository to the job's start.

`bench pr` (bench/gitops/pr.py) uses the same scratch checkouts for a pull request's head
and merge-base; deploying to a remote environment is `bench run --no-wait --commit SHA`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from bench.atomic_files import write_text_atomic
from bench.errors import AtlasError, ConfigError
from bench.gitops.checkout import DEFAULT_ENVS, bench_in, checkout_at, git, run_envs
from bench.gitops.publish import SKIP_CI
from bench.gitops.results_branch import archive
from bench.records.timeline import PUSHED_AT_VARIABLE

HOOK_MARKER = "# atlas-bench post-receive hook"
ZERO_SHA = "0" * 40
DEFAULT_EXPERIMENT = "smoke"
LOG_DIR = "atlas-hook-logs"


@dataclass(frozen=True)
class HookSettings:
    envs: tuple[str, ...] = DEFAULT_ENVS
    experiment: str = DEFAULT_EXPERIMENT
    branch: str = "main"
    foreground: bool = False
    overrides: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        from bench.names import check_name

        for env in self.envs:
            check_name(env, "environment")
        check_name(self.experiment, "experiment")
        if not re.fullmatch(r"[A-Za-z0-9._/-]{1,200}", self.branch) or ".." in self.branch:
            raise ConfigError(f"branch {self.branch[:80]!r} is not a plain branch name")


def _is_bare(repo: Path) -> bool:
    proc = subprocess.run(["git", "rev-parse", "--is-bare-repository"], cwd=repo, capture_output=True, text=True)
    return proc.returncode == 0 and proc.stdout.strip() == "true"


def hook_script(bare: Path, settings: HookSettings, python: str = sys.executable) -> str:
    """The post-receive script: read the pushed refs, hand each to `bench hooks received`."""
    args = [
        "-m",
        "bench",
        "hooks",
        "received",
        "--repo",
        str(bare),
        "--branch",
        settings.branch,
        "--experiment",
        settings.experiment,
    ]
    for env in settings.envs:
        args += ["--env", env]
    for item in settings.overrides:
        args += ["--set", item]
    cmd = " ".join(shlex.quote(a) for a in [python, *args])
    log_dir = shlex.quote(str(bare / LOG_DIR))
    what = shlex.quote(f"atlas: running {settings.experiment} on {', '.join(settings.envs)} for")
    if settings.foreground:
        run = f'{cmd} --old "$old" --new "$new" --ref "$ref" --pushed-at "$pushed_at"'
    else:
        run = (
            f'mkdir -p {log_dir}; log={log_dir}/"$new".log\n'
            f'    nohup {cmd} --old "$old" --new "$new" --ref "$ref" --pushed-at "$pushed_at" '
            f'>"$log" 2>&1 </dev/null &\n'
            f"    echo {what} "
            f'"$new in the background; log: $log"'
        )
    return f"""#!/bin/sh
{HOOK_MARKER} (written by `bench hooks install`; edit with that command, not by hand)
pushed_at=$(date +%s.%N)
unset GIT_DIR GIT_QUARANTINE_PATH
while read -r old new ref; do
    {run}
done
"""


def install(bare: Path, settings: HookSettings, python: str = sys.executable, replace: bool = False) -> Path:
    """Write `hooks/post-receive`; refuse to overwrite a hook we did not write."""
    bare = Path(bare).resolve()
    if not bare.is_dir() or not _is_bare(bare):
        raise ConfigError(f"{bare} is not a bare git repository: create one with `git init --bare {bare}`")
    if not settings.envs:
        raise ConfigError("name at least one environment with --env")
    hook = bare / "hooks" / "post-receive"
    if hook.exists() and HOOK_MARKER not in hook.read_text(errors="replace") and not replace:
        raise ConfigError(f"{hook} exists and was not written by bench: move it away, or pass --replace")
    hook.parent.mkdir(exist_ok=True)
    write_text_atomic(hook, hook_script(bare, settings, python), mode=0o755)
    return hook


def should_run(bare: Path, old: str, new: str, ref: str, branch: str) -> str | None:
    """None when this pushed ref must be run, else why not."""
    if ref != f"refs/heads/{branch}":
        return f"{ref} is not the watched branch {branch}"
    if new == ZERO_SHA:
        return "branch deleted"
    subject = git(bare, "log", "-1", "--format=%s", new).strip()
    if SKIP_CI in subject:
        return f"commit says {SKIP_CI} (a published report)"
    return None


def job_start_time(results: Path) -> float | None:
    """Earliest start recorded by any run in the results tree (run.json, else train.jsonl)."""
    starts = []
    for run_json in results.glob("*/*/run.json"):
        try:
            meta = json.loads(run_json.read_text())
        except (OSError, ValueError):
            continue
        sched = meta.get("scheduler") if isinstance(meta.get("scheduler"), dict) else {}
        value = sched.get("start_time", meta.get("start_time"))
        if isinstance(value, (int, float)):
            starts.append(float(value))
    return min(starts) if starts else None


def notify_webhooks(clusters: Path, envs: tuple[str, ...], new: str, ref: str, out: TextIO) -> None:
    """GitHub's part: each OpenShift environment with a `webhook_secret_file` gets the push event.

    Its BuildConfig webhook then starts the Build of the pushed commit, which `bench run`
    finds (no instantiate). A refusal is printed, never fatal: `bench run` builds anyway."""
    from bench.environments.load import load_env
    from bench.targets import target_for

    for name in envs:
        try:
            env = load_env(name, clusters)
        except AtlasError:
            continue  # `bench run` names what is wrong with it
        if env.kind != "openshift" or not env.get("webhook_secret_file"):
            continue
        try:
            said = target_for(env).notify_push(new, ref, git(clusters.parent, "log", "-1", "--format=%s", new).strip())
        except AtlasError as exc:
            said = f"webhook not delivered: {exc}"
        print(f"atlas: {name}: {said}", file=out, flush=True)


def received(
    bare: Path,
    old: str,
    new: str,
    ref: str,
    pushed_at: float,
    settings: HookSettings,
    out: TextIO = sys.stdout,
    keep: bool = False,
) -> int:
    """Run the local environments for one pushed commit and publish the report back."""
    bare = Path(bare).resolve()
    why_not = should_run(bare, old, new, ref, settings.branch)
    if why_not:
        print(f"atlas: not running {new[:12]}: {why_not}", file=out)
        return 0
    work = checkout_at(bare, new, settings.branch, out)
    os.environ[PUSHED_AT_VARIABLE] = repr(pushed_at)  # the runs' timelines start at the push (bench_in passes it on)
    notify_webhooks(work / "clusters", settings.envs, new, ref, out)
    failed = True
    try:
        submitted_at = time.time()
        completed = run_envs(work, settings.envs, settings.experiment, settings.overrides, work / "results", out)
        started = job_start_time(work / "results")
        if started is not None:
            print(
                f"atlas: time from push to job start: {started - pushed_at:.2f} s (job start as recorded in run.json)",
                file=out,
            )
        else:
            print(
                f"atlas: time from push to job submission: {submitted_at - pushed_at:.2f} s "
                "(no run.json recorded a start time)",
                file=out,
            )
        # the raw records first, so they are kept even when the report fails
        kept = archive(work, work / "results", remote="origin") if (work / "results").is_dir() else None
        if kept and kept.added:
            print(f"atlas: {len(kept.added)} run record(s) kept on the results branch ({kept.commit[:12]})", file=out)
        bench_in(work, "report", out=out)
        bench_in(
            work,
            "publish",
            "--branch",
            settings.branch,
            "-m",
            f"reports: {new[:12]} on {', '.join(settings.envs)}",
            out=out,
        )
        print(f"atlas: report for {new[:12]} published to {bare}", file=out)
        failed = False
        if not completed:
            print("atlas: a run did not complete; its record is in the published report", file=out)
        return 0 if completed else 1
    finally:
        if keep or failed:
            print(f"atlas: checkout and run records kept at {work}", file=out)
        else:
            shutil.rmtree(work, ignore_errors=True)
