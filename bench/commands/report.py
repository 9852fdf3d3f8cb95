"""Write OUT/<date>-<shortsha>/README.md (tables, charts, advisor, provenance, data
problems) for one commit's runs and regenerate OUT/README.md, the index with history.
Same results in, same bytes out: date and sha come from the runs, not the clock."""
from __future__ import annotations

import argparse
from pathlib import Path

HELP = "Markdown + charts under reports/"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", type=Path, default=Path("results"), help="results tree (default results/)")
    parser.add_argument("--out", type=Path, default=Path("reports"), help="reports folder (default reports/)")
    parser.add_argument("--env", dest="envs", action="append", default=[], metavar="ENV",
                        help="only this environment (repeatable; default: all in the results)")
    parser.add_argument("--commit", default=None, help="report this commit (default: the newest run's)")
    parser.add_argument("--baseline", default=None, help="environment the others are compared with")
    parser.add_argument("--allow-different", action="store_true", help="compare even if config hashes differ")


def run(args: argparse.Namespace) -> int:
    from bench.report import write_report

    res = write_report(args.results, args.out, commit=args.commit, envs=args.envs or None,
                       allow_different=args.allow_different, baseline=args.baseline)
    print(f"report: {res.readme}")
    print(f"index:  {res.index}")
    return 0
