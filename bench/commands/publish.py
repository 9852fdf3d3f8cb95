"""Commit `reports/` as the bot with `[skip ci]` and push it back to the branch.

When the push is rejected because the branch moved (another publisher got there first),
fetch, rebase, and push again, a bounded number of times; never force. A conflicting
`reports/README.md` index is regenerated from the report folders, so two reports
published at once both land.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from bench.gitops.publish import DEFAULT_ATTEMPTS, DEFAULT_PATHS

HELP = "commit reports/ as the bot ([skip ci]) and push, rebasing and retrying if the branch moved"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repo-dir", type=Path, default=Path("."), help="the repository clone (default: .)")
    p.add_argument(
        "--path",
        dest="paths",
        action="append",
        metavar="PATH",
        help=f"path to commit, repeatable (default: {' '.join(DEFAULT_PATHS)})",
    )
    p.add_argument("--remote", default="origin", help="remote to push to (default: origin)")
    p.add_argument("--branch", default=None, help="branch to push to (default: the checked-out branch)")
    p.add_argument("--message", "-m", default="reports: update", help="commit subject; `[skip ci]` is appended")
    p.add_argument(
        "--attempts",
        type=int,
        default=DEFAULT_ATTEMPTS,
        help=f"pushes to try before giving up (default: {DEFAULT_ATTEMPTS})",
    )


def regenerate_index(root: Path) -> None:
    """Write the reports index (`reports/README.md`) again from the report folders in `root`."""
    from bench.render.index import write_index

    write_index(root / "reports")


# Generated files that may conflict on a rebase -> how to write them again from the tree.
REGENERATE: dict[str, Callable[[Path], None]] = {"reports/README.md": regenerate_index}


def run(args: argparse.Namespace) -> int:
    from bench.gitops.publish import publish

    result = publish(
        args.repo_dir,
        args.paths or DEFAULT_PATHS,
        message=args.message,
        remote=args.remote,
        branch=args.branch,
        attempts=args.attempts,
        regenerate=REGENERATE,
    )
    if result.status == "nothing":
        print("bench publish: nothing new to publish")
    else:
        print(
            f"bench publish: pushed {result.commit} after {result.attempts} push(es), "
            f"{result.rebases} rebase(s) onto a moved branch"
        )
    return 0
