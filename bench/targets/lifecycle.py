"""Submit runs to a target, wait for them with a progress line, collect their records.

Shared by `bench run` and `bench demo`. Runs on a target whose jobs share this machine
(`runs_share_host`) go one after another; elsewhere all are submitted, then awaited.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from bench.environments.facts import environment_facts
from bench.errors import AtlasError
from bench.in_job.provenance import git_info
from bench.records.place import place_run
from bench.records.read import RunData, load_run, workload_error
from bench.records.timeline import pushed_at
from bench.targets import JobSpec, RunStatus, Target
from bench.targets.base import new_run_id
from bench.targets.wait_line import Ticker, clear, running_line

POLL_S = 0.5


def current_commit() -> str:
    from bench.environments.load import REPO_ROOT

    return git_info(REPO_ROOT).get("sha") or "nocommit"


@dataclass(frozen=True)
class Collected:
    """A run in the results tree, and its record as read once after placing it (None when
    it was there already): the caller indexes it and reads its exit from this, not from a
    second read of the files."""

    path: Path
    run: RunData | None


def collect_run(
    target: Target, run_id: str, results: Path, out: TextIO | None = None, finished: RunStatus | None = None
) -> Collected:
    """Place one finished run into results/<env>/<run_id>/ (bench.records.place.place_run).

    Collecting a run that is already there is a no-op, and says so. `finished`: the run's
    finished status when the caller has it (the target then need not ask again).
    """
    out = out or sys.stdout
    placed = place_run(
        Path(results),
        environment_facts(target.env),  # frozen here: the record's layer reads no env.yaml
        run_id,
        lambda into: target.fetch(run_id, into, finished),
        lambda facts: target.timeline_marks(run_id, facts),
    )
    if not placed.new:
        print(f"already collected: {placed.path} (left as it is: collected records never change)", file=out)
        return Collected(placed.path, None)
    print(f"collected: {placed.path}", file=out)
    for skipped in (*placed.skipped, *placed.warnings):
        print(f"  warning: {run_id}: {skipped}", file=out)
    run = load_run(placed.path, target.env.name)
    for problem in run.problems:
        print(f"  warning: {run_id}: {problem}", file=out)
    return Collected(placed.path, run)


def wait(
    target: Target,
    run_ids: list[str],
    out: TextIO | None = None,
    poll_s: float = POLL_S,
    timeout_s: float | None = None,
) -> dict[str, RunStatus]:
    """Wait until every run has finished; one progress line, rewritten on a terminal.

    Each round is one `target.watch`. A target that waits on the scheduler's side
    (`long_poll_s`: Slurm's watch.yml asks squeue every few seconds on the login node) returns
    only when a run's state or detail changed, a run finished, or `long_poll_s` passed: one
    Ansible run per change, not one per poll, and a finished run is seen within one poll
    of the scheduler saying so. Other targets answer at once, and the loop then sleeps
    `poll_s`, or as long as the last round took if that was longer (an expensive status
    asked back to back kept a core busy), so waiting never spends more than half its time
    asking, and a finished run is seen at most one round late."""
    out = out or sys.stdout
    start = time.monotonic()
    tty = out.isatty() if hasattr(out, "isatty") else False
    final: dict[str, RunStatus] = {}
    seen: dict[str, RunStatus | None] = dict.fromkeys(run_ids)
    last_line, shown = "", None
    while True:
        asked = time.monotonic()
        pending = [r for r in run_ids if r not in final]
        wait_s = target.long_poll_s
        if timeout_s is not None:
            wait_s = max(0.0, min(wait_s, timeout_s - (asked - start)))
        with Ticker(out, start, shown if tty and wait_s > 0 else None):
            statuses = target.watch({r: seen[r] for r in pending}, wait_s)
        for run_id in pending:
            st = seen[run_id] = statuses[run_id]
            if st.state.finished:
                final[run_id] = st
                if tty:
                    clear(out)
                print(f"{target.env.name}/{run_id}: {st.state.value} ({st.detail})", file=out, flush=True)
                shown = None
            else:
                line = running_line(target.env.name, run_id, st.state.value, time.monotonic() - start, st.detail)
                if tty:
                    clear(out)
                    print(line, end="", file=out, flush=True)
                    shown = (target.env.name, run_id, st.state.value, st.detail)
                elif line.split(" s ")[-1] != last_line.split(" s ")[-1] or not last_line:
                    print(line, file=out, flush=True)
                last_line = line
        if len(final) == len(run_ids):
            return final
        if timeout_s is not None and time.monotonic() - start > timeout_s:
            raise AtlasError(
                f"gave up waiting after {timeout_s:.0f} s for {', '.join(sorted(set(run_ids) - set(final)))} "
                f"on {target.env.name}; they keep running: `bench status --env {target.env.name}`"
            )
        took = time.monotonic() - asked
        time.sleep(max(0.0, poll_s - took) if target.long_poll_s else max(poll_s, took))


def check_workload_input(experiment: str, overrides: tuple[str, ...]) -> None:
    """Resolve the experiment and every --set with the workload's own config code, so bad
    input is refused here, before anything is submitted or written."""
    from workflows.biggan.config import resolve
    from workflows.biggan.errors import WorkloadConfigError

    try:
        resolve(experiment, list(overrides))
    except WorkloadConfigError as exc:
        raise AtlasError(f"{exc} (nothing submitted; `python -m workflows.biggan --list-keys` lists the keys)") from exc


@dataclass(frozen=True)
class Submission:
    """What one `bench run` (or one environment of `bench demo`) submits: its target, the
    experiment and its --set overrides, the commit. Built by `Submission.checked` once,
    before the first job: the experiment is resolved, ATLAS_PUSHED_AT and the commit are
    checked, and every batch then submits from this value without checking again."""

    target: Target
    experiment: str
    commit: str
    overrides: tuple[str, ...] = ()

    @classmethod
    def checked(cls, target: Target, experiment: str, commit: str, overrides: tuple[str, ...] = ()) -> Submission:
        check_workload_input(experiment, overrides)
        pushed_at()  # a bad ATLAS_PUSHED_AT is refused before anything is submitted
        if not commit or len(commit) < 7:
            raise AtlasError(f"the commit to run must be a git sha, got {commit!r}")
        return cls(target, experiment, commit, tuple(overrides))

    def job(self) -> JobSpec:
        return JobSpec(run_id=new_run_id(self.commit), experiment=self.experiment, commit=self.commit,
                       overrides=self.overrides)  # fmt: skip


def submit_runs(submission: Submission, runs: int = 1, out: TextIO | None = None) -> list[RunStatus]:
    """Submit `runs` runs and return at once; training goes on without us."""
    out = out or sys.stdout
    target, submitted = submission.target, []
    for _ in range(runs):
        job = submission.job()
        st = target.submit(job)
        print(
            f"submitted {target.env.name}/{job.run_id} ({job.experiment}, commit {job.commit[:8]}, "
            f"job {st.scheduler_job_id})",
            file=out,
            flush=True,
        )
        submitted.append(st)
    return submitted


def run_and_collect(
    submission: Submission,
    runs: int,
    results: Path,
    out: TextIO | None = None,
    timeout_s: float | None = None,
) -> list[Collected]:
    """Submit `runs` runs, wait, and collect every finished one."""
    out = out or sys.stdout
    if runs < 1:
        raise AtlasError(f"--runs must be at least 1, got {runs}")
    target = submission.target
    collected: list[Collected] = []
    failed: list[str] = []

    def one_batch(n: int) -> None:
        ids = [st.run_id for st in submit_runs(submission, n, out)]
        for run_id, st in wait(target, ids, out, timeout_s=timeout_s).items():
            done = collect_run(target, run_id, results, out, finished=st)
            collected.append(done)
            if st.state.value != "completed":
                failed.append(f"{run_id}: {st.state.value} ({st.detail.splitlines()[0] if st.detail else ''})")
                reason = workload_error(done.path)
                if reason:
                    failed.append(f"  the workload said: {reason}")

    if getattr(target, "runs_share_host", False):
        for _ in range(runs):
            one_batch(1)
    else:
        one_batch(runs)
    if failed:
        print(f"{len(failed)} of {runs} run(s) did not complete (their records are collected anyway):", file=out)
        for line in failed:
            print(f"  {line}", file=out)
    return collected
