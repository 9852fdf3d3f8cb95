"""Copy finished runs' records into RESULTS/<env>/<run_id>/.

Idempotent: a run already in the results tree is left as it is (records are immutable
once collected), so running collect twice changes nothing. Runs still going are listed
and skipped; collect them later.
"""
from __future__ import annotations

import argparse
from pathlib import Path

HELP = "copy finished run records into the results tree"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--env", required=True, help="environment (clusters/<env>/)")
    parser.add_argument("--results", type=Path, default=Path("results"), help="results tree (default results/)")
    parser.add_argument("--run", dest="run_ids", action="append", default=[], metavar="RUN_ID",
                        help="only this run (repeatable)")
    parser.add_argument("--commit", default=None, help="only runs of this commit (prefix)")


def run(args: argparse.Namespace) -> int:
    from bench.runner import collect_run
    from bench.targets import target_for

    target = target_for(args.env)
    runs = [target.status(r) for r in args.run_ids] if args.run_ids else target.list_runs(args.commit)
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
