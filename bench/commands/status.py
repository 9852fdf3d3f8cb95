"""Show the runs an environment knows of: state, scheduler job id, commit, detail."""

from __future__ import annotations

import argparse
from typing import Any

from bench.commands.common_args import add_run_selection

HELP = "how are the runs of an environment doing"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_selection(parser)


def selected_runs(args: argparse.Namespace) -> tuple[Any, list[Any]]:
    """(target, the RunStatus of each selected run)."""
    from bench.targets import target_for

    target = target_for(args.env)
    return target, [target.status(r) for r in args.run_ids] if args.run_ids else target.list_runs(args.commit)


def run(args: argparse.Namespace) -> int:
    _target, runs = selected_runs(args)
    if not runs:
        print(f"{args.env}: no runs")
        return 0
    print(f"{'run':<32} {'state':<10} {'job':<12} {'commit':<9} detail")
    for st in runs:
        print(
            f"{st.run_id:<32} {st.state.value:<10} {str(st.scheduler_job_id or '-'):<12} "
            f"{(st.commit or '-')[:8]:<9} {st.detail}"
        )
    return 0
