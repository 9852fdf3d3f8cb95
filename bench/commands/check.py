"""Check every run record under a results tree: the run.json schema, sample time that
only moves forward, the config hash, the files a record names, plausible units.

Prints one line per problem (`results/<env>/<run_id>: problem`) and exits 1 when there
is any, 0 when every record is sound. Where this repository holds a results branch, each
history entry whose git object is missing or corrupt in this clone is listed too (`bench
history` and `bench report` leave that entry out and go on). `bench report` runs the same checks and lists the
problems in the report.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.commands.common_args import add_envs

HELP = "validate a results tree (schema, sample times, config hash, files, units)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "results", type=Path, nargs="?", default=Path("results"), help="results tree (default results/)"
    )
    add_envs(parser, "only this environment (repeatable)")


def run(args: argparse.Namespace) -> int:
    from bench.errors import AtlasError
    from bench.records.read import find_runs

    if not args.results.is_dir():
        raise AtlasError(f"{args.results} is not a folder (give the results tree that `bench collect` fills)")
    runs = find_runs(args.results, args.envs or None)
    problems = 0
    for run in runs:
        for problem in run.problems:
            print(f"{run.path}: {problem}")
            problems += 1
    bad = sum(1 for r in runs if r.problems)
    print(f"{len(runs)} run record(s) checked, {bad} with problems ({problems} problem(s))")
    branch = branch_problems(Path("."))
    for line in branch:
        print(line)
    return 1 if problems or branch else 0


def branch_problems(repo: Path) -> list[str]:
    """The results branch of the repository `bench report` reads (the one here), if any: each
    history entry whose object is missing or corrupt in this clone (history and report leave it out)."""
    from bench.gitops.results_branch import read_entries, results_ref, toplevel

    root = toplevel(repo)
    ref = results_ref(root) if root else None
    skipped: list[str] = []
    if ref is not None:
        read_entries(root, ref, skipped=skipped)
    return skipped
