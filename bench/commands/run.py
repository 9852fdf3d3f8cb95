"""Submit an experiment to an environment, wait with a progress display, and collect
each finished run into RESULTS/<env>/<run_id>/.

With `--no-wait` (the push-to-deploy step of CI) it submits and returns at once:
training goes on in the environment, and `bench collect` fetches the records later.
"""

from __future__ import annotations

import argparse

from bench.commands.common_args import add_env, add_experiment, add_overrides, add_results

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


def check_before_running(env: str, experiment: str) -> None:
    """`bench validate ENV --experiment NAME`'s checks: nothing is submitted on a bad folder or preset."""
    from bench.commands.validation import check_env, check_experiments
    from bench.errors import ConfigError

    problems = check_env(env)
    if not problems:
        problems = check_experiments([experiment])[1]
    if problems:
        raise ConfigError("; ".join(problems) + f" (nothing submitted; fix it, then check with `bench validate {env}`)")


def run(args: argparse.Namespace) -> int:
    from bench.errors import AtlasError
    from bench.targets import target_for
    from bench.targets.lifecycle import run_and_collect

    check_before_running(args.env, args.experiment)
    target = target_for(args.env)
    reason = target.available()
    if reason:
        raise AtlasError(f"environment {args.env} cannot be used from here: {reason}")
    if args.no_wait:
        from bench.targets.lifecycle import current_commit, submit_runs

        for st in submit_runs(
            target, args.experiment, args.commit or current_commit(), args.runs, tuple(args.overrides)
        ):
            print(f"{args.env}/{st.run_id}: {st.state.value} {st.detail}".rstrip())
        print(f"training goes on; fetch the records later with `bench collect --env {args.env}`")
        return 0
    if args.commit:
        raise AtlasError("--commit is only for --no-wait: a waited run always runs this checkout's HEAD")
    paths = run_and_collect(
        target, args.experiment, args.runs, args.results, tuple(args.overrides), timeout_s=args.timeout
    )
    from bench.analysis.run_index import index_placed
    from bench.records.read import load_run

    index_placed(paths)  # each run's index entry, written once at placement (bench.analysis.run_index)
    ok = sum(1 for p in paths if (load_run(p).meta.get("exit") or {}).get("code") == 0)
    return 0 if ok == len(paths) else 1
