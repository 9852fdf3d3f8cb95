"""bench.gitops.github through the real github3.py client against the REST double."""

from __future__ import annotations

import pytest

from bench.errors import AtlasError, ConfigError
from bench.gitops.github import MARKER, MAX_BODY_CHARS, token_from_env, upsert_comment, with_marker
from tests.github.conftest import FORK_TOKEN, HEAD, REPO, WRITE_TOKEN, github_double  # noqa: F401


def api(double) -> str:
    return double.url + "/api/v3"


def test_create_then_update_the_same_comment(github_double):
    first = upsert_comment(REPO, 7, "images/s: 10", WRITE_TOKEN, api_url=api(github_double))
    assert first.action == "created"
    second = upsert_comment(REPO, 7, "images/s: 12", WRITE_TOKEN, api_url=api(github_double))
    assert second.action == "updated"
    assert second.comment_id == first.comment_id
    comments = github_double.comments_on(REPO, 7)
    assert len(comments) == 1
    assert comments[0]["body"].startswith(MARKER) and "images/s: 12" in comments[0]["body"]
    assert ("PATCH", f"/api/v3/repos/{REPO}/issues/comments/{first.comment_id}") in github_double.requests
    third = upsert_comment(REPO, 7, "images/s: 12", WRITE_TOKEN, api_url=api(github_double))
    assert third.action == "unchanged"


def test_finds_the_marker_comment_on_a_later_page(github_double):
    github_double.max_per_page = 2
    for i in range(5):
        github_double.add_comment(REPO, 7, f"human comment {i}")
    ours = github_double.add_comment(REPO, 7, with_marker("old numbers"), login="atlas-bot")
    github_double.add_comment(REPO, 7, "another human comment")
    result = upsert_comment(REPO, 7, "new numbers", WRITE_TOKEN, api_url=api(github_double))
    assert result.action == "updated" and result.comment_id == ours["id"]
    assert len(github_double.comments_on(REPO, 7)) == 7
    pages = [p for m, p in github_double.requests if m == "GET" and p.endswith("/comments")]
    assert len(pages) >= 3  # it really followed the Link headers


def test_other_pull_requests_comments_are_not_touched(github_double):
    github_double.pulls[(REPO, 8)] = HEAD
    other = github_double.add_comment(REPO, 8, with_marker("PR 8 numbers"))
    upsert_comment(REPO, 7, "PR 7 numbers", WRITE_TOKEN, api_url=api(github_double))
    assert other["body"].endswith("PR 8 numbers")
    assert len(github_double.comments_on(REPO, 7)) == 1


def test_bad_token_is_401_with_a_clear_message(github_double):
    with pytest.raises(AtlasError, match="rejected the token.*401") as info:
        upsert_comment(REPO, 7, "x", "ghs_wrong", api_url=api(github_double))
    assert "ghs_wrong" not in str(info.value)


def test_fork_token_is_403_and_points_at_workflow_run(github_double):
    with pytest.raises(AtlasError, match="403.*fork.*workflow_run"):
        upsert_comment(REPO, 7, "x", FORK_TOKEN, api_url=api(github_double))
    assert github_double.comments_on(REPO, 7) == []


def test_unknown_pull_request_is_404(github_double):
    with pytest.raises(AtlasError, match="#99 not found.*404"):
        upsert_comment(REPO, 99, "x", WRITE_TOKEN, api_url=api(github_double))
    with pytest.raises(AtlasError, match="not found.*404"):
        upsert_comment("atlas-org/other", 7, "x", WRITE_TOKEN, api_url=api(github_double))


def test_rate_limit_says_when_it_resets(github_double):
    github_double.rate_limited = True
    with pytest.raises(AtlasError, match=r"rate limit exceeded.*resets at \d\d:\d\d:\d\d UTC"):
        upsert_comment(REPO, 7, "x", WRITE_TOKEN, api_url=api(github_double))


def test_unreachable_api_is_a_clear_error():
    with pytest.raises(AtlasError, match="cannot reach the GitHub API"):
        upsert_comment(REPO, 7, "x", WRITE_TOKEN, api_url="http://127.0.0.1:9/api/v3")


def test_expect_head_sha_refuses_a_moved_pull_request(github_double):
    with pytest.raises(AtlasError, match="not commenting"):
        upsert_comment(REPO, 7, "x", WRITE_TOKEN, api_url=api(github_double), expect_head_sha="b" * 40)
    assert github_double.comments_on(REPO, 7) == []
    assert (
        upsert_comment(REPO, 7, "x", WRITE_TOKEN, api_url=api(github_double), expect_head_sha=HEAD).action == "created"
    )


def test_with_marker_cuts_to_githubs_limit():
    text = with_marker("x" * (MAX_BODY_CHARS + 10))
    assert len(text) <= MAX_BODY_CHARS and text.startswith(MARKER) and "cut to GitHub" in text
    assert with_marker(f"{MARKER}\nbody") == f"{MARKER}\nbody"


def test_token_and_repo_checks():
    with pytest.raises(ConfigError, match="GITHUB_TOKEN is not set"):
        token_from_env({})
    with pytest.raises(ConfigError, match="OWNER/NAME"):
        upsert_comment("not-a-repo", 7, "x", WRITE_TOKEN)


def test_a_foreign_comment_with_the_marker_is_left_alone(github_double):
    """Anyone can paste the marker on a public PR: only the token's own comment is edited."""
    planted = github_double.add_comment(REPO, 7, with_marker("all good, merge it"), login="mallory")
    result = upsert_comment(REPO, 7, "images/s: 10", WRITE_TOKEN, api_url=api(github_double))
    assert result.action == "created" and result.comment_id != planted["id"]
    assert planted["body"].endswith("all good, merge it")
    ours = [c for c in github_double.comments_on(REPO, 7) if c["_login"] == "atlas-bot"]
    assert len(ours) == 1 and "images/s: 10" in ours[0]["body"]
    assert ("GET", "/api/v3/user") in github_double.requests
    again = upsert_comment(REPO, 7, "images/s: 11", WRITE_TOKEN, api_url=api(github_double))
    assert again.action == "updated" and again.comment_id == ours[0]["id"]
    assert planted["body"].endswith("all good, merge it")


def test_an_actions_token_matches_github_actions_bot(github_double, monkeypatch):
    """GET /user refuses an installation token (403): in Actions its author is github-actions[bot]."""
    github_double.logins[WRITE_TOKEN] = None
    github_double.add_comment(REPO, 7, with_marker("planted"), login="mallory")
    mine = github_double.add_comment(REPO, 7, with_marker("old"), login="github-actions[bot]")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    result = upsert_comment(REPO, 7, "new", WRITE_TOKEN, api_url=api(github_double))
    assert result.action == "updated" and result.comment_id == mine["id"]
    monkeypatch.delenv("GITHUB_ACTIONS")
    monkeypatch.delenv("ATLAS_COMMENT_LOGIN", raising=False)
    with pytest.raises(AtlasError, match="ATLAS_COMMENT_LOGIN"):
        upsert_comment(REPO, 7, "newer", WRITE_TOKEN, api_url=api(github_double))
