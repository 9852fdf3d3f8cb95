"""Local GitOps: make `git push` to a local bare repository run the local environments.

`bench hooks install BARE_REPO` writes a post-receive hook. Each push to the branch then
clones the pushed sha, runs `bench run` on the named environments (default: local) with
the pushed code, `bench report`, and `bench publish` back into BARE_REPO, the same
commands CI runs, and prints the time from push to job start. By default the hook runs
in the background (the push returns at once; the log is under BARE_REPO/atlas-hook-logs/);
`--foreground` makes the push wait and shows the output to the pusher.
`bench hooks received` is what the hook calls.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from bench.commands.common_args import add_envs, add_experiment, add_overrides

HELP = "install the git hook: `git push` to a bare repo runs, reports and publishes"


def _common(p: argparse.ArgumentParser) -> None:
    add_envs(p, "environment to run, repeatable (default: local)")
    add_experiment(p)
    p.add_argument("--branch", default="main", help="branch whose pushes run (default: main)")
    add_overrides(p)


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="hooks_command", metavar="ACTION")
    sub.required = True
    inst = sub.add_parser("install", allow_abbrev=False, help="write the post-receive hook into a bare repository")
    inst.add_argument("bare_repo", type=Path, metavar="BARE_REPO")
    _common(inst)
    inst.add_argument(
        "--foreground",
        action="store_true",
        help="the push waits for the run and shows its output (default: run in the background)",
    )
    inst.add_argument("--replace", action="store_true", help="overwrite a post-receive hook bench did not write")
    rec = sub.add_parser(
        "received", allow_abbrev=False, help="(called by the hook) run, report and publish one pushed commit"
    )
    rec.add_argument("--repo", type=Path, required=True, help="the bare repository")
    rec.add_argument("--old", required=True)
    rec.add_argument("--new", required=True)
    rec.add_argument("--ref", required=True)
    rec.add_argument("--pushed-at", type=float, default=None, help="Unix time the push arrived (default: now)")
    rec.add_argument("--keep", action="store_true", help="keep the scratch checkout for inspection")
    _common(rec)


def _settings(args: argparse.Namespace, foreground: bool = False):
    from bench.gitops.checkout import DEFAULT_ENVS
    from bench.gitops.hooks import HookSettings

    return HookSettings(
        envs=tuple(args.envs or DEFAULT_ENVS),
        experiment=args.experiment,
        branch=args.branch,
        foreground=foreground,
        overrides=tuple(args.overrides),
    )


def run(args: argparse.Namespace) -> int:
    from bench.gitops import hooks

    if args.hooks_command == "install":
        settings = _settings(args, args.foreground)
        path = hooks.install(args.bare_repo, settings, replace=args.replace)
        mode = "in the foreground" if settings.foreground else "in the background"
        print(
            f"bench hooks: installed {path}: pushes to {settings.branch} run {settings.experiment} on "
            f"{', '.join(settings.envs)} {mode}, then report and publish back"
        )
        return 0
    pushed_at = args.pushed_at if args.pushed_at is not None else time.time()
    return hooks.received(
        args.repo, args.old, args.new, args.ref, pushed_at, _settings(args), out=sys.stdout, keep=args.keep
    )
