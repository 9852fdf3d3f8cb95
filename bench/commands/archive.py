"""Keep the raw run records of a results folder on the `results` branch, for good.

One commit per call (as the bot, with `[skip ci]`) adds every run the branch does not
hold yet: its record files as `bench collect` placed them (samples compressed) and its
history entry; and each environment's sound `noise.json` (`bench noise`) the branch does
not hold as it is, unless the branch's counts more runs (bench/gitops/branch_noise.py).
Written with git plumbing only: the work tree, the index and the
checked-out branch are never touched. The push is never forced: when the branch moved
meanwhile, the commit is rebuilt on the new tip and pushed again.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.commands.common_args import add_results

HELP = "keep the collected run records on the repository's results branch (append-only)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_results(p)
    p.add_argument("--repo-dir", type=Path, default=Path("."), help="the repository clone (default: .)")
    p.add_argument("--remote", default="origin", help="remote to push to (default: origin)")
    p.add_argument("--local", action="store_true", help="commit to the local results branch only, push nothing")
    p.add_argument("--branch", default="results", help="the results branch (default: results)")
    p.add_argument("--depth", type=int, default=None, help="fetch the branch this shallow (CI: 1; default: all of it)")
    p.add_argument("--attempts", type=int, default=5, help="pushes to try before giving up (default: 5)")


def run(args: argparse.Namespace) -> int:
    from bench.gitops.results_branch import archive

    if not args.results.is_dir():  # nothing collected (CI's artifact download found none)
        print(f"bench archive: no results folder {args.results}: nothing to keep")
        return 0
    res = archive(
        args.repo_dir,
        args.results,
        remote=None if args.local else args.remote,
        branch=args.branch,
        attempts=args.attempts,
        depth=args.depth,
    )
    for why in res.skipped:  # a link out of the tree, a file the run does not own: never committed
        print(f"bench archive: warning: not taken: {why}")
    if res.status == "nothing":
        print(f"bench archive: {args.branch} already holds every run of {args.results}")
    else:
        where = "committed locally" if res.status == "committed" else f"pushed to {args.remote}"
        noise = f" with the noise floor of {', '.join(res.noise)}" if res.noise else ""
        print(
            f"bench archive: {len(res.added)} run(s){noise} {where} on {args.branch} as {res.commit[:12]} "
            f"({res.rebases} rebuild(s) onto a moved branch)"
        )
    return 0
