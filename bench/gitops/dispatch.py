"""May a manual run (`workflow_dispatch`) deploy this commit? Only one on the default
branch or the head of an open pull request.

`deploy.yml` takes a `sha` input and runs that commit with the clusters' secrets. Anyone
who may dispatch could otherwise name any commit pushed anywhere (a fork's commit is
reachable in the base repository through its PR refs, even after the PR is closed). This
check asks the GitHub REST API (compare the default branch with the sha; list open pull
requests) with the job's read-only token.

Usage: python -m bench.gitops.dispatch SHA   (GITHUB_REPOSITORY, DEFAULT_BRANCH,
GITHUB_TOKEN and GITHUB_API_URL from the environment, as Actions sets them)
"""

from __future__ import annotations

import json
import os
import re
import sys
import urllib.error
import urllib.request
from typing import Any

MAX_PAGES = 10


def _get(url: str, token: str) -> tuple[Any, str | None]:
    request = urllib.request.Request(
        url, headers={"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        link = response.headers.get("Link") or ""
        nxt = re.search(r'<([^>]+)>;\s*rel="next"', link)
        return json.loads(response.read()), nxt.group(1) if nxt else None


def allowed(sha: str, repo: str, default_branch: str, token: str, api: str) -> str:
    """Why `sha` may be deployed; DispatchRefused when it may not."""
    if not re.fullmatch(r"[0-9a-f]{40}", sha):
        raise DispatchRefused(f"{sha[:60]!r} is not a full 40-hex commit sha")
    if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repo) or not re.fullmatch(
        r"[A-Za-z0-9_./-]+", default_branch
    ):
        raise DispatchRefused("GITHUB_REPOSITORY / DEFAULT_BRANCH are not a repository and a branch name")
    base = f"{api.rstrip('/')}/repos/{repo}"
    try:
        compare, _ = _get(f"{base}/compare/{default_branch}...{sha}", token)
        if isinstance(compare, dict) and compare.get("status") in ("identical", "behind"):
            return f"{sha[:12]} is on {default_branch}"
    except urllib.error.HTTPError as exc:
        if exc.code != 404:  # 404: the sha is unknown to the repository; the PR list decides
            raise DispatchRefused(f"GitHub answered {exc.code} comparing {default_branch}...{sha[:12]}") from None
    url: str | None = f"{base}/pulls?state=open&per_page=100"
    for _ in range(MAX_PAGES):
        if url is None:
            break
        try:
            pulls, url = _get(url, token)
        except urllib.error.HTTPError as exc:
            raise DispatchRefused(f"GitHub answered {exc.code} listing open pull requests") from None
        for pr in pulls if isinstance(pulls, list) else []:
            if isinstance(pr, dict) and (pr.get("head") or {}).get("sha") == sha and pr.get("state", "open") == "open":
                return f"{sha[:12]} is the head of open pull request #{pr.get('number')}"
    raise DispatchRefused(
        f"{sha[:12]} is neither on {default_branch} nor the head of an open pull request: not deployed"
    )


class DispatchRefused(Exception):
    """One line: why this commit is not deployed."""


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    env = os.environ
    try:
        if len(args) != 1:
            raise DispatchRefused("usage: python -m bench.gitops.dispatch SHA")
        if not env.get("GITHUB_TOKEN"):
            raise DispatchRefused("GITHUB_TOKEN is not set (the job's token, contents and pull-requests: read)")
        why = allowed(
            args[0],
            env.get("GITHUB_REPOSITORY", ""),
            env.get("DEFAULT_BRANCH", ""),
            env["GITHUB_TOKEN"],
            env.get("GITHUB_API_URL", "https://api.github.com"),
        )
    except (DispatchRefused, urllib.error.URLError, OSError, ValueError) as exc:
        print(f"dispatch: refused: {exc}", file=sys.stderr)
        return 2
    print(f"dispatch: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
