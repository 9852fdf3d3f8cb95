"""Fixtures: the GitHub REST double (tests/github/rest_double.py) on loopback."""

from __future__ import annotations

import pytest

from tests.github.rest_double import GitHubDouble

WRITE_TOKEN = "ghs_writeTOKEN0123456789abcdefSECRET"
FORK_TOKEN = "ghs_readonlyFORK0123456789abcdefSECRET"
REPO = "atlas-org/atlas"
HEAD = "a" * 40


@pytest.fixture
def github_double():
    double = GitHubDouble(
        tokens={WRITE_TOKEN: "write", FORK_TOKEN: "read"}, repos={REPO}, pulls={(REPO, 7): HEAD}
    ).start()
    yield double
    double.stop()
