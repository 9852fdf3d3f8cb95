"""Arguments that several commands share, declared once (asv's `commands/common_args.py`).

A flag means the same thing, with the same default and help, wherever it appears.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.names import arg_type


def add_results(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", type=Path, default=Path("results"), help="results tree (default results/)")


def add_reports(parser: argparse.ArgumentParser, dest: str = "reports", flag: str = "--reports") -> None:
    parser.add_argument(flag, dest=dest, type=Path, default=Path("reports"), help="reports folder (default reports/)")


def add_env(
    parser: argparse.ArgumentParser, help: str = "environment (clusters/<env>/)", required: bool = True
) -> None:
    """`--env NAME`: the one environment a command acts on (a checked name); optional
    (default None) for a command that otherwise reads every environment."""
    parser.add_argument("--env", type=arg_type("environment"), required=required, default=None, help=help)


def add_envs(parser: argparse.ArgumentParser, help: str = "only this environment (repeatable; default: all)") -> None:
    parser.add_argument(
        "--env", type=arg_type("environment"), dest="envs", action="append", default=[], metavar="ENV", help=help
    )


def add_experiment(parser: argparse.ArgumentParser, default: str | None = "smoke") -> None:
    required = default is None
    parser.add_argument(
        "--experiment",
        type=arg_type("experiment"),
        required=required,
        default=default,
        help="workload preset (workflows/biggan/experiments/NAME.yaml)" + ("" if required else f"; default {default}"),
    )


def add_overrides(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="workload setting override, repeatable (passed to the workload's --set)",
    )


def add_thresholds(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--threshold",
        action="append",
        default=[],
        metavar="METRIC=VALUE",
        help="regression threshold for one metric, e.g. images_per_s=10%% (default 5%%)",
    )


def add_report_url(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--report-url", default=None, help="link to the full report, put in the comment")


def add_selection(parser: argparse.ArgumentParser) -> None:
    """Which runs of a results tree to compare; `bench compare` and `bench report` take the same."""
    add_results(parser)
    add_envs(parser, "only this environment (repeatable; default: all in the results)")
    parser.add_argument("--commit", default=None, help="only runs of this commit (default: the newest run's)")
    parser.add_argument(
        "--baseline",
        type=arg_type("environment"),
        default=None,
        help="environment the others are compared with (default: first by name)",
    )
    parser.add_argument(
        "--allow-different",
        action="store_true",
        help="also compare runs of other configurations of the experiment (default: they are excluded)",
    )
    parser.add_argument(
        "--allow-dirty",
        action="store_true",
        help="also compare runs of uncommitted code (git.dirty; default: they are excluded)",
    )


def add_run_selection(parser: argparse.ArgumentParser) -> None:
    """The runs one environment knows of; `bench status` and `bench collect` take the same."""
    add_env(parser)
    parser.add_argument(
        "--run",
        type=arg_type("run id"),
        dest="run_ids",
        action="append",
        default=[],
        metavar="RUN_ID",
        help="only this run (repeatable)",
    )
    parser.add_argument("--commit", default=None, help="only runs of this commit (prefix)")
