"""Cancel runs on any environment. Local, container and Slurm runs are marked cancelled
(a `CANCELLED` file in the run folder) before the job is stopped, so nothing resubmits
them (the Slurm batch script checks the mark) and the record says `cancelled`, not
`preempted`; a Kubernetes/OpenShift Job is deleted. The workload still checkpoints on
the way down; collect the run as usual.

Runs already finished are left alone. `--run` or `--commit` chooses the runs; `--all`
cancels every unfinished run of the environment."""

from __future__ import annotations

import argparse

from bench.commands.common_args import add_run_selection
from bench.errors import ConfigError

HELP = "cancel runs (never resubmitted; the record says cancelled)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_selection(parser)
    parser.add_argument("--all", action="store_true", help="every unfinished run of the environment")


def run(args: argparse.Namespace) -> int:
    from bench.commands import status

    if not (args.run_ids or args.commit or args.all):
        raise ConfigError("name the runs to cancel: --run RUN_ID (repeatable), --commit SHA or --all")
    target, runs = status.selected_runs(args)
    cancelled = 0
    for st in runs:
        if st.state.finished:
            print(f"already finished: {args.env}/{st.run_id} ({st.state.value}); left as it is")
            continue
        if target.cancel(st.run_id) is False:  # the record turned final meanwhile: never signalled
            print(f"already finished: {args.env}/{st.run_id} (its record is final); left as it is")
            continue
        cancelled += 1
        print(f"cancelled: {args.env}/{st.run_id} (job {st.scheduler_job_id or '-'}); it will not be resubmitted")
    if not runs:
        print(f"{args.env}: no runs to cancel")
    return 0
