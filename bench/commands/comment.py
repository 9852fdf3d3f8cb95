"""Upsert the pull request's one benchmark comment (found again by a hidden marker).

Either post a Markdown file (`--body-file`), or render the comment from a PR job's
artifact (`--artifact DIR`: the PR, head and base from DIR/pr.json, the numbers from the
run records under DIR/results, checked and rendered here with this checkout's template;
the artifact's own comment.md is never posted, since the PR's code wrote it), or write the
comparison of the PR's runs with the merge-base's runs from a results tree (`--results
--head --base`, verdicts within each environment's own history) to `--out` and post that.
The Markdown is on disk before anything is sent, so an API failure (bad token, fork
token, rate limit) loses nothing: fix the cause and post the same file again. The token
comes from GITHUB_TOKEN and is never printed. Only a comment that carries the marker AND
was written by the token's own account (GET /user; an Actions GITHUB_TOKEN writes as
github-actions[bot]; ATLAS_COMMENT_LOGIN names another account) is edited: a comment
anyone else planted the marker in is left alone. The marker names this repository and
its Atlas workflow (bench.gitops.github.marker_for).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from bench.commands.common_args import add_envs
from bench.errors import AtlasError, ConfigError

HELP = "create or update the pull request's benchmark comment (GITHUB_TOKEN)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pr", type=int, default=None, metavar="N", help="pull request number")
    p.add_argument(
        "--repo",
        default=os.environ.get("GITHUB_REPOSITORY", ""),
        metavar="OWNER/NAME",
        help="repository (default: $GITHUB_REPOSITORY)",
    )
    p.add_argument("--body-file", type=Path, default=None, metavar="FILE", help="post this Markdown file as it is")
    p.add_argument(
        "--artifact",
        type=Path,
        default=None,
        metavar="DIR",
        help="render the comment from DIR/results for the PR in DIR/pr.json (what `bench pr` writes; data only)",
    )
    p.add_argument(
        "--results",
        type=Path,
        default=None,
        help="write the comment from this results tree instead (needs --head and --base)",
    )
    p.add_argument("--head", metavar="SHA", help="the PR's commit (with --results)")
    p.add_argument("--base", metavar="SHA", help="the merge-base commit (with --results)")
    add_envs(p, "only this environment (repeatable; default: all in the results)")
    p.add_argument(
        "--threshold",
        action="append",
        default=[],
        metavar="METRIC=VALUE",
        help="regression threshold for one metric, e.g. images_per_s=10%% (default 5%%)",
    )
    p.add_argument("--report-url", default=None, help="link to the full report (e.g. the workflow run's page)")
    p.add_argument(
        "--out",
        type=Path,
        default=Path("results/pr-comment.md"),
        help="where the written comment is kept (default: results/pr-comment.md)",
    )
    p.add_argument("--no-post", action="store_true", help="only write --out (a fork PR's job uploads it instead)")
    p.add_argument(
        "--api-url",
        default=os.environ.get("GITHUB_API_URL", "https://api.github.com"),
        help="GitHub API URL (default: $GITHUB_API_URL or https://api.github.com; an Enterprise URL ends in /api/v3)",
    )
    p.add_argument(
        "--expect-head-sha",
        metavar="SHA",
        default=None,
        help="comment only if the PR's head is this commit (the workflow_run job passes "
        "the measured sha, so an artifact cannot steer the comment to another PR)",
    )
    p.add_argument("--dry-run", action="store_true", help="print the comment instead of posting it")


def render_pr_body(
    results: Path,
    head: str,
    base: str,
    envs: list[str] | None = None,
    thresholds: dict[str, float] | None = None,
    report_url: str | None = None,
    runs_note: str = "",
) -> str:
    """The PR comment's Markdown: bench.analysis.pr_data decides (each environment's PR runs
    against its own merge-base runs), bench.render.comment words it. `runs_note`: why
    `bench pr` ran as many runs as it did (bench.analysis.sample_size)."""
    from bench.analysis.pr_data import read_pr_data
    from bench.gitops.code_changes import code_change
    from bench.gitops.results_branch import toplevel
    from bench.render.comment import draw_pr_body

    code = code_change(toplevel(Path(".")), base, head)  # the checkout the comment is rendered in
    return draw_pr_body(read_pr_data(results, head, base, envs, thresholds, code), report_url, runs_note)


def _read_artifact(args: argparse.Namespace) -> Path:
    """PR number and measured sha from pr.json; checked, since a fork's job wrote them."""
    import re

    from bench.analysis.regression import parse_thresholds
    from bench.names import check_name
    from bench.records import strict_numbers

    meta_path = args.artifact / "pr.json"
    try:  # size- and depth-limited: a fork's pr.json nested 100,000 deep is refused, not a RecursionError
        meta = strict_numbers.loads(meta_path.read_bytes(), max_bytes=1 << 20)
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"{meta_path}: missing or not JSON ({exc}); is {args.artifact} the PR job's artifact?"
        ) from None
    pr, head = (
        meta.get("pr") if isinstance(meta, dict) else None,
        meta.get("head_sha") if isinstance(meta, dict) else None,
    )
    if not isinstance(pr, int) or isinstance(pr, bool) or pr <= 0:
        raise ConfigError(f"{meta_path}: 'pr' must be a positive integer, got {pr!r}")
    if not isinstance(head, str) or not re.fullmatch(r"[0-9a-f]{40}", head):
        raise ConfigError(f"{meta_path}: 'head_sha' must be a 40-hex commit sha, got {head!r}")
    if args.pr is not None and args.pr != pr:
        raise ConfigError(f"{meta_path} is for PR #{pr}, not #{args.pr}")
    if args.expect_head_sha and args.expect_head_sha != head:
        raise ConfigError(f"{meta_path} measured {head}, not the expected {args.expect_head_sha}: not commenting")
    base = meta.get("base_sha")
    if not isinstance(base, str) or not re.fullmatch(r"[0-9a-f]{40}", base):
        raise ConfigError(f"{meta_path}: 'base_sha' must be a 40-hex commit sha, got {base!r}")
    envs = meta.get("envs")
    if envs is not None and not (isinstance(envs, list) and all(isinstance(e, str) for e in envs)):
        raise ConfigError(f"{meta_path}: 'envs' must be a list of environment names")
    for env in envs or []:
        check_name(env, f"{meta_path}: environment")
    args.pr = pr
    args.expect_head_sha = args.expect_head_sha or head
    results = args.artifact / "results"
    if not results.is_dir():
        raise ConfigError(f"{results} does not exist: the PR job uploaded no run records")
    body = render_pr_body(
        results, head, base, args.envs or envs or None, parse_thresholds(args.threshold), args.report_url
    )  # the numbers from the records, checked by load_run; the words from this checkout's template
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(body)
    print(f"bench comment: rendered {args.out} from {results}")
    return args.out


def _body_path(args: argparse.Namespace) -> Path:
    from bench.analysis.regression import parse_thresholds

    if sum(x is not None for x in (args.body_file, args.results, args.artifact)) > 1:
        raise ConfigError("give one of --body-file, --artifact or --results")
    if args.artifact is not None:
        return _read_artifact(args)
    if args.pr is None:
        raise ConfigError("--pr N is required (except with --artifact, whose pr.json names the PR)")
    if args.body_file is not None:
        if not args.body_file.is_file():
            raise ConfigError(
                f"comment body {args.body_file} does not exist: write it first "
                "(`bench comment --results ... --no-post`) or pass the file the PR job uploaded"
            )
        return args.body_file
    if args.results is None or not args.head or not args.base:
        raise ConfigError("say what to post: --body-file FILE, --artifact DIR, or --results DIR --head SHA --base SHA")
    body = render_pr_body(
        args.results, args.head, args.base, args.envs or None, parse_thresholds(args.threshold), args.report_url
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(body)
    print(f"bench comment: wrote {args.out}")
    return args.out


def run(args: argparse.Namespace) -> int:
    from bench.gitops import github

    path = _body_path(args)
    body = path.read_text()
    if args.dry_run:
        print(github.with_marker(body, github.marker_for(args.repo)))
        return 0
    if args.no_post:
        return 0
    try:
        token = github.token_from_env()
        result = github.upsert_comment(
            args.repo,
            args.pr,
            body,
            token,
            api_url=args.api_url,
            expect_head_sha=args.expect_head_sha,
            marker=github.marker_for(args.repo),
        )
    except AtlasError as exc:
        raise type(exc)(f"{exc} (nothing is lost: the comment is still in {path})") from None
    print(f"bench comment: {result.action} comment {result.comment_id} on {args.repo}#{args.pr}: {result.url}")
    return 0
