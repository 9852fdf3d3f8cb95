"""Copy finished runs' records into RESULTS/<env>/<run_id>/.

Idempotent: a run already in the results tree is left as it is (records are immutable
once collected), so running collect twice changes nothing. Runs still going are listed
and skipped; collect them later.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.commands import status

HELP = "copy finished run records into the results tree"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    status.add_arguments(parser)
    parser.add_argument("--results", type=Path, default=Path("results"), help="results tree (default results/)")


def run(args: argparse.Namespace) -> int:
    from bench.targets.runner import collect_run

    target, runs = status.selected_runs(args)
    skipped = 0
    for st in runs:
        if not st.state.finished:
            print(f"not finished: {args.env}/{st.run_id} ({st.state.value}: {st.detail})")
            skipped += 1
            continue
        collect_run(target, st.run_id, args.results)
    if not runs:
        print(f"{args.env}: no runs to collect")
    return 0
