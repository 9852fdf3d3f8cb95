"""Submit an experiment to an environment, wait with a progress display, and collect
each finished run into RESULTS/<env>/<run_id>/.

With `--no-wait` (the push-to-deploy step of CI) it submits and returns at once:
training goes on in the environment, and `bench collect` fetches the records later.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from bench.commands.common_args import add_env, add_experiment, add_overrides, add_results

if TYPE_CHECKING:
    from bench.environments.load import Environment

HELP = "submit to an environment, wait, collect"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_env(parser, "environment: a folder clusters/<env>/ with env.yaml")
    add_experiment(parser, default=None)
    parser.add_argument("--runs", type=int, default=1, help="how many runs (default 1)")
    add_results(parser)
    add_overrides(parser)
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop waiting after this long (the runs go on; collect them later)",
    )
    parser.add_argument(
        "--no-wait", action="store_true", help="submit and return at once; collect the runs later with `bench collect`"
    )
    parser.add_argument(
        "--commit",
        metavar="SHA",
        default=None,
        help="with --no-wait: the commit to run, e.g. the pushed sha (default: this checkout's HEAD)",
    )


def check_before_running(env: str) -> Environment:
    """`bench validate ENV`'s checks: nothing is submitted on a bad folder. Returns the
    environment, read once: the target is made from it."""
    from bench.commands.validation import check_env
    from bench.environments.load import load_env
    from bench.errors import ConfigError

    environment = load_env(env, check_numbers=False)  # check_env lists its numbers with the rest
    problems = check_env(environment)
    if problems:
        raise ConfigError("; ".join(problems) + f" (nothing submitted; fix it, then check with `bench validate {env}`)")
    return environment


def run(args: argparse.Namespace) -> int:
    from bench.errors import AtlasError
    from bench.targets import target_for
    from bench.targets.lifecycle import Submission, current_commit, run_and_collect, submit_runs

    if args.commit and not args.no_wait:
        raise AtlasError("--commit is only for --no-wait: a waited run always runs this checkout's HEAD")
    target = target_for(check_before_running(args.env))
    submission = Submission.checked(target, args.experiment, args.commit or current_commit(), tuple(args.overrides))
    reason = target.available()
    if reason:
        raise AtlasError(f"environment {args.env} cannot be used from here: {reason}")
    if args.no_wait:
        for st in submit_runs(submission, args.runs):
            print(f"{args.env}/{st.run_id}: {st.state.value} {st.detail}".rstrip())
        print(f"training goes on; fetch the records later with `bench collect --env {args.env}`")
        return 0
    collected = run_and_collect(submission, args.runs, args.results, timeout_s=args.timeout)
    from bench.analysis.run_index import index_collected
    from bench.records.read import load_run

    # each run's index entry, written once at placement (bench.analysis.run_index), from the record read there
    index_collected(collected)
    ok = sum(1 for c in collected if ((c.run or load_run(c.path)).meta.get("exit") or {}).get("code") == 0)
    return 0 if ok == len(collected) else 1
