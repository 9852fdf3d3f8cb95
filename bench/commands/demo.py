"""The main job on one machine: run the smoke experiment several times on every local
environment that is available here (env.yaml `local: true`; each one skipped is named
with its reason), keep the runs on the local `results` branch (`bench archive --local`, so
`bench history` works afterwards), then compare and report into reports/, and print the
report's path."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from bench.commands.common_args import add_envs
from bench.names import arg_type

if TYPE_CHECKING:
    from bench.targets.lifecycle import Collected

HELP = "everything below, on the local environments"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--experiment",
        type=arg_type("experiment"),
        default="smoke",
        help="workload preset (default smoke: seconds on 2 cores)",
    )
    parser.add_argument("--runs", type=int, default=3, help="runs per environment (default 3: enough for the tests)")
    parser.add_argument("--results", type=Path, default=Path("results"), help="results tree (default results/)")
    parser.add_argument("--out", type=Path, default=Path("reports"), help="reports folder (default reports/)")
    add_envs(parser, "only this local environment (repeatable; default: every local one)")
    parser.add_argument("--clusters", type=Path, default=None, help="clusters folder (default: the repository's)")
    parser.add_argument(
        "--timeout",
        type=float,
        default=600,
        metavar="SECONDS",
        help="per environment, stop waiting after this long (default 600)",
    )


def run(args: argparse.Namespace) -> int:
    from bench.commands.report import write_report
    from bench.environments.load import CLUSTERS_DIR, known_envs, load_env
    from bench.errors import AtlasError
    from bench.targets import target_for
    from bench.targets.lifecycle import Submission, current_commit, run_and_collect

    clusters = args.clusters or CLUSTERS_DIR
    names = args.envs or known_envs(clusters)
    used: list[str] = []
    made: list[Collected] = []  # each new run, and its record as collection read it
    for name in names:
        try:
            env = load_env(name, clusters)
        except AtlasError as exc:
            print(f"skip {name}: {exc}")
            continue
        if env.get("local") is not True:
            if args.envs:
                print(f"skip {name}: not a local environment (env.yaml has no `local: true`)")
            continue
        try:
            target = target_for(env)
            reason = target.available()
        except AtlasError as exc:
            reason = str(exc)
        if reason:
            print(f"skip {name}: {reason}")
            continue
        print(f"== {name}: {args.runs} x {args.experiment}")
        submission = Submission.checked(target, args.experiment, current_commit())
        made += run_and_collect(submission, args.runs, args.results, timeout_s=args.timeout)
        used.append(name)
    if not used:
        raise AtlasError(
            "no local environment is available here (see the reasons above); "
            "`make setup` installs what the `local` environment needs"
        )
    # Exactly the runs made now (another commit may land while a demo runs).
    # The demo reports exactly the runs it just made, all from this checkout as it is:
    # uncommitted edits are compared too (the report's header says so).
    from bench.analysis.run_index import index_collected

    index_collected(sorted(made, key=lambda c: c.path))  # each run's index entry, written once at placement
    from bench.gitops.results_local import keep_locally

    # On the local results branch of the clone holding results/ (never pushed), so `bench history`
    # works after the demo and the report's history chart has every commit the branch keeps.
    kept = keep_locally(args.results)
    print(kept.line)
    res = write_report(
        args.results, args.out, envs=used, only={c.path for c in made}, allow_dirty=True, history=kept.entries
    )
    print(f"report: {res.readme}")
    print(f"index:  {res.index}")
    return 0
