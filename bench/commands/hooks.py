"""Local GitOps: make `git push` to a local bare repository run the local environments.

`bench hooks install BARE_REPO` writes a post-receive hook. Each push to the branch then
clones the pushed sha, runs `bench run` on the named environments (default: local) with
the pushed code, `bench report`, and `bench publish` back into BARE_REPO, the same
commands CI runs, and prints the time from push to job start. By default the hook runs
in the background (the push returns at once; the log is under BARE_REPO/atlas-hook-logs/);
`--foreground` makes the push wait and shows the output to the pusher.
`bench hooks received` is what the hook calls.

`bench hooks pr-run --pr N --base REF` is the pull-request step of CI: it runs the PR's
head and its merge-base on the environments named by `bench:<env>` labels (default:
local), one after the other on this machine, and writes `comment.md` + `pr.json` for
`bench comment --artifact`.

`bench hooks collect-new --env ENV` and `bench hooks report-new` are the scheduled
collection of CI: collect the finished runs of every commit that a report in reports/
does not cover yet, then write one report per such commit.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HELP = "local GitOps: a post-receive hook so `git push` to a bare repo runs, reports and publishes"


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--env", dest="envs", action="append", metavar="NAME", help="environment to run, repeatable (default: local)"
    )
    p.add_argument("--experiment", default="smoke", help="experiment preset (default: smoke)")
    p.add_argument("--branch", default="main", help="branch whose pushes run (default: main)")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="workload setting passed to `bench run --set`, repeatable",
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="hooks_command", metavar="ACTION")
    sub.required = True
    inst = sub.add_parser("install", help="write the post-receive hook into a bare repository")
    inst.add_argument("bare_repo", type=Path, metavar="BARE_REPO")
    _common(inst)
    inst.add_argument(
        "--foreground",
        action="store_true",
        help="the push waits for the run and shows its output (default: run in the background)",
    )
    inst.add_argument("--replace", action="store_true", help="overwrite a post-receive hook bench did not write")
    rec = sub.add_parser("received", help="(called by the hook) run, report and publish one pushed commit")
    rec.add_argument("--repo", type=Path, required=True, help="the bare repository")
    rec.add_argument("--old", required=True)
    rec.add_argument("--new", required=True)
    rec.add_argument("--ref", required=True)
    rec.add_argument("--pushed-at", type=float, default=None, help="Unix time the push arrived (default: now)")
    rec.add_argument("--keep", action="store_true", help="keep the scratch checkout for inspection")
    _common(rec)
    pr = sub.add_parser("pr-run", help="run a PR's head and merge-base here and write the PR comment (CI)")
    pr.add_argument("--pr", type=int, required=True, metavar="N", help="pull request number")
    pr.add_argument("--base", required=True, metavar="REF", help="the PR's base (branch or sha); its merge-base is run")
    pr.add_argument(
        "--labels-json",
        default="[]",
        metavar="JSON",
        help="the PR's label names as a JSON list; `bench:<env>` labels choose the environments",
    )
    pr.add_argument(
        "--env",
        dest="envs",
        action="append",
        metavar="NAME",
        help="environment, repeatable (overrides the labels; default: local)",
    )
    pr.add_argument("--experiment", default="smoke", help="experiment preset (default: smoke)")
    pr.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="workload setting override, repeatable",
    )
    pr.add_argument("--results", type=Path, default=Path("results"), help="results tree (default: results/)")
    pr.add_argument(
        "--out", type=Path, default=Path("results/pr"), help="folder for comment.md and pr.json (default: results/pr)"
    )
    pr.add_argument("--report-url", default=None, help="link to the full report, put in the comment")
    pr.add_argument(
        "--threshold",
        action="append",
        default=[],
        metavar="METRIC=VALUE",
        help="regression threshold for one metric, e.g. images_per_s=10%% (default 5%%)",
    )
    col = sub.add_parser("collect-new", help="collect finished runs of commits no report covers yet (CI collect)")
    col.add_argument(
        "--env", dest="envs", action="append", required=True, metavar="NAME", help="environment, repeatable"
    )
    col.add_argument("--results", type=Path, default=Path("results"), help="results tree (default: results/)")
    col.add_argument(
        "--reports",
        type=Path,
        default=Path("reports"),
        help="reports folder whose runs.csv files say what is reported (default: reports/)",
    )
    rep = sub.add_parser("report-new", help="write a report for every commit in the results tree (CI collect)")
    rep.add_argument("--results", type=Path, default=Path("results"), help="results tree (default: results/)")
    rep.add_argument("--reports", type=Path, default=Path("reports"), help="reports folder (default: reports/)")


def _settings(args: argparse.Namespace, foreground: bool = False):
    from bench.gitops.hooks import DEFAULT_ENVS, HookSettings

    return HookSettings(
        envs=tuple(args.envs or DEFAULT_ENVS),
        experiment=args.experiment,
        branch=args.branch,
        foreground=foreground,
        overrides=tuple(args.overrides),
    )


def run(args: argparse.Namespace) -> int:
    from bench.gitops import hooks

    if args.hooks_command == "pr-run":
        envs = tuple(args.envs) if args.envs else hooks.envs_from_labels(args.labels_json)
        from bench.analysis.regression import parse_thresholds

        hooks.pr_run(
            Path("."),
            args.pr,
            args.base,
            envs,
            args.experiment,
            args.results,
            args.out,
            tuple(args.overrides),
            args.report_url,
            parse_thresholds(args.threshold),
        )
        return 0
    if args.hooks_command == "collect-new":
        for env in args.envs:
            hooks.collect_unreported(env, args.results, args.reports)
        return 0
    if args.hooks_command == "report-new":
        hooks.report_commits(args.results, args.reports)
        return 0
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
