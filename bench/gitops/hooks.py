"""Local GitOps: `git push` to a bare repository runs the local environments.

`install` writes a post-receive hook into a bare repository. For every push to the
watched branch (except report commits, which carry `[skip ci]`, as on GitHub), the hook
runs `bench hooks received`, which does what CI does for a commit, with the same
commands: clone the bare repository at the pushed sha into a scratch folder, `bench run`
each local environment there (the pushed code runs, not the installed one), `bench
report`, and `bench publish` the report back to the bare repository. It prints the time
from the push reaching the repository to the job's start.

The CI workflows use the same pieces: `pr_run` (a PR's head and its merge-base, run one
after the other in scratch checkouts); deploying to a remote environment is
`bench run --no-wait --commit SHA`.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from bench.envs import Environment
from bench.errors import AtlasError, ConfigError
from bench.gitops.publish import SKIP_CI

HOOK_MARKER = "# atlas-bench post-receive hook"
ZERO_SHA = "0" * 40
DEFAULT_ENVS = ("local",)
DEFAULT_EXPERIMENT = "smoke"
LOG_DIR = "atlas-hook-logs"


@dataclass(frozen=True)
class HookSettings:
    envs: tuple[str, ...] = DEFAULT_ENVS
    experiment: str = DEFAULT_EXPERIMENT
    branch: str = "main"
    foreground: bool = False
    overrides: tuple[str, ...] = ()


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
    if settings.foreground:
        run = f'{cmd} --old "$old" --new "$new" --ref "$ref" --pushed-at "$pushed_at"'
    else:
        run = (
            f'mkdir -p {log_dir}; log={log_dir}/"$new".log\n'
            f'    nohup {cmd} --old "$old" --new "$new" --ref "$ref" --pushed-at "$pushed_at" '
            f'>"$log" 2>&1 </dev/null &\n'
            f'    echo "atlas: running {settings.experiment} on {", ".join(settings.envs)} for $new '
            f'in the background; log: $log"'
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
    tmp = hook.with_suffix(".tmp")
    tmp.write_text(hook_script(bare, settings, python))
    tmp.chmod(0o755)
    os.replace(tmp, hook)
    return hook


def _git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise AtlasError(f"`git {' '.join(args)}` failed: {proc.stderr.strip()}")
    return proc.stdout


def should_run(bare: Path, old: str, new: str, ref: str, branch: str) -> str | None:
    """None when this pushed ref must be run, else why not."""
    if ref != f"refs/heads/{branch}":
        return f"{ref} is not the watched branch {branch}"
    if new == ZERO_SHA:
        return "branch deleted"
    subject = _git(bare, "log", "-1", "--format=%s", new).strip()
    if SKIP_CI in subject:
        return f"commit says {SKIP_CI} (a published report)"
    return None


def _bench(work: Path, *args: str, out: TextIO, ok: tuple[int, ...] = (0,)) -> int:
    """`python -m bench ARGS` in the pushed checkout, so the pushed code is what runs."""
    print(f"$ bench {' '.join(args)}", file=out, flush=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    proc = subprocess.run(
        [sys.executable, "-m", "bench", *args],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    out.write(proc.stdout)
    out.flush()
    if proc.returncode not in ok:
        raise AtlasError(f"`bench {' '.join(args)}` failed with exit code {proc.returncode} (output above)")
    return proc.returncode


def checkout_at(source: Path, sha: str, branch: str | None, out: TextIO) -> Path:
    """A scratch clone of `source` at `sha` (on `branch` when given, so publish can push it)."""
    work = Path(tempfile.mkdtemp(prefix=f"atlas-{sha[:12]}-"))
    try:
        _git(work, "clone", "--quiet", "--no-hardlinks", str(source), ".")
        if branch:
            _git(work, "checkout", "--quiet", "-B", branch, sha)
        else:
            _git(work, "checkout", "--quiet", "--detach", sha)
    except AtlasError:
        shutil.rmtree(work, ignore_errors=True)
        raise
    print(f"atlas: commit {sha[:12]} checked out in {work}", file=out, flush=True)
    return work


def run_envs(
    work: Path, envs: tuple[str, ...], experiment: str, overrides: tuple[str, ...], results: Path, out: TextIO
) -> bool:
    """`bench run` on each environment inside the checkout `work`, records into `results`.

    False when a run did not complete (`bench run` exit 1): its record is collected all
    the same and belongs in the report. Any other failure raises.
    """
    all_ok = True
    for env in envs:
        args = ["run", "--env", env, "--experiment", experiment, "--results", str(Path(results).resolve())]
        for item in overrides:
            args += ["--set", item]
        all_ok &= _bench(work, *args, out=out, ok=(0, 1)) == 0
    return all_ok


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
        _bench(work, "report", out=out)
        _bench(
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


# -- pull requests: the PR's head and its merge-base, on the same machine ------------------

LABEL_PREFIX = "bench:"
PR_JSON = "pr.json"
COMMENT_MD = "comment.md"


def envs_from_labels(labels_json: str, default: tuple[str, ...] = DEFAULT_ENVS) -> tuple[str, ...]:
    """`["bench:local", "bug"]` -> ("local",); no `bench:` label -> the default envs."""
    try:
        labels = json.loads(labels_json or "[]")
    except ValueError:
        raise ConfigError(f"--labels-json: not a JSON list of label names: {labels_json[:80]!r}") from None
    if not isinstance(labels, list):
        raise ConfigError("--labels-json: expected a JSON list of label names")
    envs = [str(x)[len(LABEL_PREFIX) :].strip() for x in labels if str(x).startswith(LABEL_PREFIX)]
    return tuple(dict.fromkeys(e for e in envs if e)) or default


def pr_run(
    repo: Path,
    pr: int,
    base_ref: str,
    envs: tuple[str, ...],
    experiment: str,
    results: Path,
    out_dir: Path,
    overrides: tuple[str, ...] = (),
    report_url: str | None = None,
    thresholds: dict[str, float] | None = None,
    out: TextIO = sys.stdout,
) -> Path:
    """Run the PR's head and its merge-base on `envs`, write the comment and `pr.json` to `out_dir`.

    Both commits run here, one after the other, so each environment is judged against its
    own runs only. `out_dir` is what a fork PR's job uploads for the workflow_run job.
    """
    from bench.gitops.github import render_pr_body

    repo = Path(repo).resolve()
    head = _git(repo, "rev-parse", "HEAD").strip()
    try:
        base = _git(repo, "merge-base", "HEAD", base_ref).strip()
    except AtlasError as exc:
        raise AtlasError(
            f"no merge-base of HEAD and {base_ref!r} ({exc}); check out with full history "
            "(actions/checkout `fetch-depth: 0`)"
        ) from None
    results = Path(results).resolve()
    for sha in dict.fromkeys([head, base]):
        work = checkout_at(repo, sha, None, out)
        try:
            if not run_envs(work, envs, experiment, overrides, results, out):
                print(f"atlas: a run of {sha[:12]} did not complete; its record is compared all the same", file=out)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / COMMENT_MD).write_text(
        render_pr_body(results, head, base, list(envs), thresholds, report_url=report_url)
    )
    (out_dir / PR_JSON).write_text(
        json.dumps(
            {"pr": pr, "head_sha": head, "base_sha": base, "envs": list(envs), "experiment": experiment}, indent=2
        )
        + "\n"
    )
    print(
        f"atlas: PR #{pr}: {head[:12]} vs merge-base {base[:12]} on {', '.join(envs)}: {out_dir / COMMENT_MD}", file=out
    )
    return out_dir / COMMENT_MD


# -- scheduled collection: only what no report has yet -------------------------------------


def reported_runs(reports: Path) -> set[tuple[str, str]]:
    """(env, run_id) of every run some report already covers (its `runs.csv`)."""
    import csv

    seen: set[tuple[str, str]] = set()
    for table in Path(reports).glob("*/runs.csv"):
        try:
            with table.open(newline="") as f:
                for row in csv.DictReader(f):
                    if row.get("env") and row.get("run_id"):
                        seen.add((row["env"], row["run_id"]))
        except (OSError, csv.Error):
            continue
    return seen


def collect_unreported(env: str | Environment, results: Path, reports: Path, out: TextIO = sys.stdout) -> list[str]:
    """Collect the finished runs of every commit that has a finished run no report covers.

    A commit's report is written from all its runs, so when one run is new, every
    finished run of that commit is collected again; commits fully reported are skipped.
    Returns those commits.
    """
    from bench.targets import target_for
    from bench.targets.runner import collect_run

    target = target_for(env)
    name = target.env.name
    reason = target.available()
    if reason:
        raise AtlasError(f"environment {name} cannot be used from here: {reason}")
    done = reported_runs(reports)
    finished = [st for st in target.list_runs() if st.state.finished]
    fresh = {st.commit for st in finished if (name, st.run_id) not in done}
    for st in finished:
        if st.commit in fresh:
            collect_run(target, st.run_id, results, out)
    print(f"{name}: {len(finished)} finished run(s), {len(fresh)} commit(s) with runs not reported yet", file=out)
    return sorted(c or "unknown" for c in fresh)


def report_commits(results: Path, reports: Path, out: TextIO = sys.stdout) -> list[Path]:
    """`bench report` for every commit in the results tree (what `collect_unreported` gathered)."""
    from bench.records.read import find_runs
    from bench.render.report import write_report

    shas = sorted({r.git_sha for r in find_runs(results) if r.git_sha})
    written = []
    for sha in shas:
        result = write_report(results, reports, commit=sha)
        print(f"report: {result.readme}", file=out)
        written.append(result.readme)
    if not shas:
        print(f"no collected run with a commit in {results}: no report written", file=out)
    return written
