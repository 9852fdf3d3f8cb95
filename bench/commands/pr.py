"""Benchmark a pull request: run its head and its merge-base here, one after the other,
on the environments named by `bench:<env>` labels (default: local), and write the
comment's Markdown (`comment.md`) and `pr.json` into `--out` for `bench comment --artifact`.
Each environment is judged against its own runs at the merge-base only."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.commands.common_args import (
    add_envs,
    add_experiment,
    add_overrides,
    add_report_url,
    add_results,
    add_thresholds,
)

HELP = "run a PR's head and merge-base here and write its comment (CI)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pr", type=int, required=True, metavar="N", help="pull request number")
    parser.add_argument(
        "--base", required=True, metavar="REF", help="the PR's base (branch or sha); its merge-base is run"
    )
    parser.add_argument(
        "--labels-json",
        default="[]",
        metavar="JSON",
        help="the PR's label names as a JSON list; `bench:<env>` labels choose the environments",
    )
    add_envs(parser, "environment, repeatable (overrides the labels; default: local)")
    add_experiment(parser)
    add_overrides(parser)
    add_results(parser)
    parser.add_argument(
        "--out", type=Path, default=Path("results/pr"), help="folder for comment.md and pr.json (default: results/pr)"
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=None,
        metavar="N",
        help="runs of each commit per environment (default: enough for a two-sided Mann-Whitney test to "
        "find a 10%% change with 80%% power on the environments' spread measured from their earlier runs in "
        "--results, at the level a lone changed metric must reach among the metrics adjusted together "
        "(Benjamini-Hochberg, alpha 0.05), at least 6 and at most 10, saying so when 10 cannot; 6 without "
        "earlier runs; with fewer than 3 the comment says there were not enough runs to judge)",
    )
    add_report_url(parser)
    add_thresholds(parser)


def choose_runs(results: Path, envs: tuple[str, ...], experiment: str) -> tuple[int, str]:
    """The default `--runs`: from the spread of the environments' earlier runs in `results`
    (bench.analysis.sample_size), printed; (runs, why) for the comment."""
    import sys

    from bench.analysis.regression import pr_family
    from bench.analysis.run_index import read_index
    from bench.analysis.sample_size import default_runs, spreads

    known = [e for e in envs if (Path(results) / e).is_dir()]
    entries = [r.entry for r in read_index(Path(results), known, sys.stderr)] if known else []
    choice = default_runs(envs, spreads(entries, experiment), family=len(pr_family()))
    print(f"atlas: {choice.why}", flush=True)
    return choice.runs, choice.why


def run(args: argparse.Namespace) -> int:
    from bench.analysis.regression import parse_thresholds
    from bench.commands.comment import render_pr_body
    from bench.errors import ConfigError
    from bench.gitops.pr import envs_from_labels, pr_run, write_artifact

    if args.runs is not None and args.runs < 1:
        raise ConfigError(f"--runs must be at least 1, got {args.runs}")
    envs = tuple(args.envs) if args.envs else envs_from_labels(args.labels_json)
    runs_note = ""
    if args.runs is None:
        args.runs, runs_note = choose_runs(args.results, envs, args.experiment)
    thresholds = parse_thresholds(args.threshold)
    head, base = pr_run(
        Path("."), args.base, envs, args.experiment, args.results, tuple(args.overrides), runs=args.runs
    )
    body = render_pr_body(args.results, head, base, list(envs), thresholds, args.report_url, runs_note)
    write_artifact(args.out, body, args.pr, head, base, envs, args.experiment)
    return 0
