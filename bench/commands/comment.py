"""Upsert the pull request's one benchmark comment (found again by a hidden marker).

The comment's Markdown is on disk before anything is sent, so an API failure (bad token,
fork token, rate limit) loses nothing: fix the cause and run the same command again.
The token comes from GITHUB_TOKEN and is never printed.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from bench.errors import AtlasError, ConfigError

HELP = "create or update the pull request's benchmark comment (GITHUB_TOKEN)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pr", type=int, required=True, metavar="N", help="pull request number")
    p.add_argument("--repo", default=os.environ.get("GITHUB_REPOSITORY", ""), metavar="OWNER/NAME",
                   help="repository (default: $GITHUB_REPOSITORY)")
    p.add_argument("--body-file", type=Path, required=True, metavar="FILE",
                   help="Markdown to post, e.g. the comment.md that `bench report` wrote")
    p.add_argument("--api-url", default=os.environ.get("GITHUB_API_URL", "https://api.github.com"),
                   help="GitHub API URL (default: $GITHUB_API_URL or https://api.github.com; "
                        "an Enterprise URL ends in /api/v3)")
    p.add_argument("--expect-head-sha", metavar="SHA", default=None,
                   help="comment only if the PR's head is this commit (the workflow_run job passes "
                        "the measured sha, so an artifact cannot steer the comment to another PR)")
    p.add_argument("--dry-run", action="store_true", help="print the comment instead of posting it")


def run(args: argparse.Namespace) -> int:
    from bench import github_comment

    path: Path = args.body_file
    if not path.is_file():
        raise ConfigError(f"comment body {path} does not exist: write it first with `bench report` "
                          "(or pass the file the PR job uploaded)")
    body = path.read_text()
    if args.dry_run:
        print(github_comment.with_marker(body))
        return 0
    try:
        token = github_comment.token_from_env()
        result = github_comment.upsert_comment(args.repo, args.pr, body, token, api_url=args.api_url,
                                               expect_head_sha=args.expect_head_sha)
    except AtlasError as exc:
        raise type(exc)(f"{exc} (nothing is lost: the comment is still in {path})") from None
    print(f"bench comment: {result.action} comment {result.comment_id} on {args.repo}#{args.pr}: {result.url}")
    return 0
