"""GitHub transport: one benchmark comment per pull request, found again by a hidden marker.

The comment's content is written by `bench.render.comment`; this module only posts it.

Through github3.py: the first run creates the comment, later runs edit the same one, so a
PR never collects a pile of stale benchmark comments. The comment edited is one that
carries the marker AND was written by the token's own account (`GET /user`): anyone can
paste the marker into a comment on a public PR, and such a comment is left alone. Every
API failure becomes an AtlasError that says what to do; the token is never part of a
message.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass

import github3
from github3 import exceptions as gh_errors

from bench.errors import AtlasError, ConfigError

MARKER = "<!-- atlas-bench:pr-comment -->"
WORKFLOW = "pr-bench"  # the workflow whose runs the comment reports (.github/workflows/pr-bench.yml)


def marker_for(repo: str) -> str:
    """The hidden marker of this repository's Atlas PR workflow: a comment carrying another
    repository's (or a bare, copied) marker is never taken for ours."""
    return f"<!-- atlas-bench:pr-comment repo={repo} workflow={WORKFLOW} -->"


# An Actions GITHUB_TOKEN is an app installation token: GET /user answers 403 for it
# (https://docs.github.com/en/rest/users/users#get-the-authenticated-user), and its
# comments are written by this account.
ACTIONS_BOT_LOGIN = "github-actions[bot]"
PUBLIC_API_URL = "https://api.github.com"
# GitHub refuses comment bodies over 65,536 characters.
MAX_BODY_CHARS = 65_536

_REPO_RE = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class CommentResult:
    action: str  # "created" | "updated" | "unchanged"
    comment_id: int
    url: str


def with_marker(body: str, marker: str = MARKER) -> str:
    """Body as posted: the marker first, cut to GitHub's limit with a note if needed."""
    text = body if marker in body else f"{marker}\n{body}"
    if len(text) > MAX_BODY_CHARS:
        note = "\n\n… (cut to GitHub's comment size limit; the full report is in the repository)\n"
        text = text[: MAX_BODY_CHARS - len(note)] + note
    return text


def token_from_env(environ: dict[str, str] | None = None) -> str:
    token = (environ if environ is not None else os.environ).get("GITHUB_TOKEN", "").strip()
    if not token:
        raise ConfigError(
            "GITHUB_TOKEN is not set: export a token that may write pull-request comments "
            "(in Actions: `env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}` with "
            "`permissions: pull-requests: write`)"
        )
    return token


def split_repo(repo: str) -> tuple[str, str]:
    if not _REPO_RE.match(repo or ""):
        raise ConfigError(f"repository {repo!r}: expected OWNER/NAME (in Actions, $GITHUB_REPOSITORY)")
    owner, name = repo.split("/")
    return owner, name


def client(token: str, api_url: str = PUBLIC_API_URL) -> github3.GitHub:
    """github.com, or an Enterprise server (whose API lives under <url>/api/v3)."""
    url = (api_url or PUBLIC_API_URL).rstrip("/")
    if url == PUBLIC_API_URL:
        return github3.GitHub(token=token)
    if url.endswith("/api/v3"):
        url = url[: -len("/api/v3")]
    return github3.GitHubEnterprise(url, token=token)


def _explain(exc: Exception, what: str, repo: str, pr: int) -> AtlasError:
    """Turn a github3 error into the message a user can act on."""
    if isinstance(exc, gh_errors.ConnectionError):
        return AtlasError(
            f"{what}: cannot reach the GitHub API ({type(exc.exception).__name__}); "
            "check the network or GITHUB_API_URL and run `bench comment` again"
        )
    if not isinstance(exc, gh_errors.ResponseError):
        return AtlasError(f"{what}: {exc}")
    headers = exc.response.headers
    msg = exc.msg or ""
    if exc.code == 429 or (
        exc.code == 403 and (headers.get("X-RateLimit-Remaining") == "0" or "rate limit" in str(msg).lower())
    ):
        reset = headers.get("X-RateLimit-Reset")
        when = (
            time.strftime("%H:%M:%S UTC", time.gmtime(int(reset)))
            if reset and reset.isdigit()
            else f"in {headers.get('Retry-After', 'a while')} s"
        )
        return AtlasError(
            f"{what}: GitHub API rate limit exceeded ({exc.code} {msg}); it resets at {when}: "
            "run `bench comment` again then"
        )
    if exc.code == 401:
        return AtlasError(f"{what}: GitHub rejected the token (401 {msg}): GITHUB_TOKEN is wrong or expired")
    if exc.code == 403:
        return AtlasError(
            f"{what}: the token may not write to {repo} (403 {msg}). A pull request from a "
            "fork gets a read-only token: its comment is posted by the workflow_run job of "
            "pr-bench.yml; elsewhere grant `permissions: pull-requests: write`"
        )
    if exc.code == 404:
        return AtlasError(
            f"{what}: {repo} pull request #{pr} not found (404 {msg}): check --repo and --pr, "
            "and that the token can see the repository"
        )
    return AtlasError(f"{what}: GitHub API error {exc.code} {msg}")


def upsert_comment(
    repo: str,
    pr: int,
    body: str,
    token: str,
    *,
    api_url: str = PUBLIC_API_URL,
    marker: str = MARKER,
    expect_head_sha: str | None = None,
) -> CommentResult:
    """Create the PR's benchmark comment, or edit the one that carries `marker`."""
    owner, name = split_repo(repo)
    if pr <= 0:
        raise ConfigError(f"pull request number must be positive, got {pr}")
    text = with_marker(body, marker)
    gh = client(token, api_url)
    step = f"pull request #{pr} of {repo}"
    try:
        if expect_head_sha:
            _check_head(gh, owner, name, pr, expect_head_sha)
        issue = gh.issue(owner, name, pr)
        if issue is None:
            raise AtlasError(f"{step}: not found")
        login = token_login(gh, step)
        existing = next(
            (c for c in issue.comments() if (c.body or "").startswith(marker) and _author(c) == login.lower()),
            None,
        )
        if existing is None:
            created = issue.create_comment(text)
            return CommentResult("created", created.id, created.html_url)
        if existing.body == text:
            return CommentResult("unchanged", existing.id, existing.html_url)
        if not existing.edit(text):
            raise AtlasError(f"{step}: GitHub did not accept the edit of comment {existing.id}")
        return CommentResult("updated", existing.id, existing.html_url)
    except gh_errors.GitHubException as exc:
        raise _explain(exc, step, repo, pr) from None


def _author(comment: object) -> str:
    user = getattr(comment, "user", None)
    return str(getattr(user, "login", "") or "").lower()


def token_login(gh: github3.GitHub, step: str, environ: dict[str, str] | None = None) -> str:
    """The login of the account the token acts as: the only author whose comment is edited.

    A personal or app-user token answers GET /user. An Actions GITHUB_TOKEN cannot (403);
    inside Actions (GITHUB_ACTIONS=true) its comments are `github-actions[bot]`'s, and
    ATLAS_COMMENT_LOGIN names another app's bot account when one posts instead.
    """
    env = environ if environ is not None else os.environ
    try:
        data = gh._json(gh._get(gh._build_url("user")), 200) or {}
    except gh_errors.ForbiddenError:
        data = {}
    login = data.get("login") if isinstance(data, dict) else None
    if isinstance(login, str) and login:
        return login
    override = env.get("ATLAS_COMMENT_LOGIN", "").strip()
    if override:
        return override
    if env.get("GITHUB_ACTIONS") == "true":
        return ACTIONS_BOT_LOGIN
    raise AtlasError(
        f"{step}: cannot tell which account the token writes as (GET /user refused it); "
        "set ATLAS_COMMENT_LOGIN to that account's login"
    )


def _check_head(gh: github3.GitHub, owner: str, name: str, pr: int, sha: str) -> None:
    """Refuse to comment when the PR's head moved away from the commit that was measured.

    The workflow_run job reads the PR number from an uploaded artifact, which the PR's own
    code wrote: checking the head sha keeps a fork from steering the comment elsewhere.
    """
    url = gh._build_url("repos", owner, name, "pulls", str(pr))
    data = gh._json(gh._get(url), 200) or {}
    head = (data.get("head") or {}).get("sha")
    if head != sha:
        raise AtlasError(
            f"pull request #{pr} of {owner}/{name} has head {head!r}, not the measured "
            f"commit {sha!r}: not commenting (the artifact does not belong to this PR)"
        )
