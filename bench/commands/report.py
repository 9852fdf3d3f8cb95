"""Write OUT/<date>-<shortsha>/README.md (tables, charts, advisor, provenance, data
problems) for one commit's runs and regenerate OUT/README.md, the index with history.
Same results in, same bytes out: date and sha come from the runs, not the clock."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.commands import compare

HELP = "Markdown + charts under reports/"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    compare.add_selection_arguments(parser)
    parser.add_argument("--out", type=Path, default=Path("reports"), help="reports folder (default reports/)")


def run(args: argparse.Namespace) -> int:
    from bench.render.report import write_report

    res = write_report(
        args.results,
        args.out,
        commit=args.commit,
        envs=args.envs or None,
        allow_different=args.allow_different,
        baseline=args.baseline,
    )
    print(f"report: {res.readme}")
    print(f"index:  {res.index}")
    return 0
