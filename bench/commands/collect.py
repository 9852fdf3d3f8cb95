"""Copy finished runs' records into RESULTS/<env>/<run_id>/.

Idempotent: a run already in the results tree is left as it is (records are immutable
once collected), so running collect twice changes nothing. Runs still going are listed
and skipped; collect them later.

`--unreported` (CI's scheduled collection) collects the finished runs of every commit
that has a finished run no report under `--reports` covers yet (their `runs.csv`), all
of that commit's runs, since a commit's report is written from all of them; `bench
report --each-commit` then writes those reports.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from bench.commands import status
from bench.commands.common_args import add_reports, add_results, add_run_selection
from bench.errors import ConfigError

HELP = "copy finished run records into the results tree"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_selection(parser)
    add_results(parser)
    parser.add_argument(
        "--unreported",
        action="store_true",
        help="collect the finished runs of every commit with a run that no report covers yet (CI's schedule)",
    )
    add_reports(parser)


def collect_unreported(env: str, results: Path, reports: Path, out: TextIO | None = None) -> list[str]:
    """Collect every finished run of the commits that have a finished run no report covers.

    Returns those commits ("unknown" for runs without one), sorted.
    """
    out = out or sys.stdout
    from bench.errors import AtlasError
    from bench.records.select import unreported_commits
    from bench.render.index import reported_runs
    from bench.targets import target_for
    from bench.targets.lifecycle import collect_run

    target = target_for(env)
    name = target.env.name
    reason = target.available()
    if reason:
        raise AtlasError(f"environment {name} cannot be used from here: {reason}")
    finished = [st for st in target.list_runs() if st.state.finished]
    fresh = unreported_commits([(st.run_id, st.commit) for st in finished], name, reported_runs(reports))
    from bench.analysis.run_index import index_collected

    index_collected(collect_run(target, st.run_id, results, out, finished=st) for st in finished if st.commit in fresh)
    print(f"{name}: {len(finished)} finished run(s), {len(fresh)} commit(s) with runs not reported yet", file=out)
    return sorted(c or "unknown" for c in fresh)


def run(args: argparse.Namespace) -> int:
    from bench.targets.lifecycle import collect_run

    if args.unreported:
        if args.run_ids or args.commit:
            raise ConfigError("--unreported chooses the runs itself: leave out --run and --commit")
        collect_unreported(args.env, args.results, args.reports)
        return 0
    from bench.analysis.run_index import index_collected

    target, runs = status.selected_runs(args)
    placed = []
    for st in runs:
        if not st.state.finished:
            print(f"not finished: {args.env}/{st.run_id} ({st.state.value}: {st.detail})")
            continue
        placed.append(collect_run(target, st.run_id, args.results, finished=st))
    # each run's index entry, written once at placement (bench.analysis.run_index), from the record read there
    index_collected(placed)
    if not runs:
        print(f"{args.env}: no runs to collect")
    return 0
