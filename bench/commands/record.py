"""Run a command and write its run record: run.json + samples-<host>.csv.

Runs inside the job on every environment. The command's exit code is passed through
(a command killed by signal N exits 128+N); SIGTERM, SIGINT and SIGUSR1 are forwarded
to it. The workload writes train.jsonl into the same --run-dir.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.commands.common_args import add_env
from bench.names import arg_type

HELP = "wrap a command and write its run record (runs inside the job)"


def positive_seconds(text: str) -> float:
    """A sampling interval: a finite number of seconds > 0 (0 would sample in a busy loop)."""
    import argparse
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value <= 0 or value > 3600:
        raise argparse.ArgumentTypeError(f"must be > 0 and at most 3600 seconds, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run-dir", required=True, type=Path, help="the run's directory (created if missing)")
    add_env(parser, "environment name written into run.json")
    parser.add_argument(
        "--interval", type=positive_seconds, default=1.0, metavar="SECONDS", help="sampling interval (default 1 s)"
    )
    parser.add_argument(
        "--run-id",
        type=arg_type("run id"),
        default=None,
        help="run id (default: $ATLAS_RUN_ID, else the run directory's name)",
    )
    parser.add_argument("--kind", default=None, help="the target kind that started the job (default: $ATLAS_KIND)")
    parser.add_argument(
        "--scheduler",
        default=None,
        help="the job's scheduler: plain, slurm or kubernetes (default: $ATLAS_SCHEDULER, else what the job shows)",
    )
    parser.add_argument(
        "cmd", nargs=argparse.REMAINDER, metavar="-- COMMAND ...", help="the command to run, after `--`"
    )


def run(args: argparse.Namespace) -> int:
    from bench.in_job.recorder import Recorder

    command = list(args.cmd)
    if command and command[0] == "--":
        command = command[1:]
    return Recorder(args.run_dir, args.env, command, args.interval, args.run_id, args.kind, args.scheduler).run()
