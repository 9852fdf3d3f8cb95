"""`bench hooks` plays GitHub's part for OpenShift environments: the push event to the webhook.

Against the API double with clusters/local-openshift applied by kubectl: the right secret
starts a Build of the pushed commit; a wrong secret or another branch builds nothing, and
the hook says why without failing (bench run would build the commit itself).
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

pytest.importorskip("kubernetes")

from bench.environments.load import CLUSTERS_DIR  # noqa: E402
from bench.gitops.hooks import notify_webhooks  # noqa: E402
from tests.doubles.kubectl_fixture import needs_kubectl, started  # noqa: E402
from tests.gitrepo import git  # noqa: E402

pytestmark = needs_kubectl


def test_push_events_reach_the_buildconfig_webhook_as_github_sends_them(tmp_path: Path, monkeypatch):
    repo = tmp_path / "clone"
    git(tmp_path, "init", "--quiet", "-b", "main", str(repo))
    git(repo, "commit", "--quiet", "--allow-empty", "-m", "train longer")
    sha = git(repo, "rev-parse", "HEAD").strip()
    clusters = repo / "clusters"
    shutil.copytree(CLUSTERS_DIR / "local-openshift", clusters / "local-openshift")
    for double, kubectl in started(tmp_path / "api"):
        kubectl("apply", "-k", str(CLUSTERS_DIR / "local-openshift"))
        monkeypatch.setenv("ATLAS_API_DOUBLE", str(tmp_path / "api"))
        out = io.StringIO()
        notify_webhooks(clusters, ("local-openshift", "local"), sha, "refs/heads/main", out)
        build = next(b for b in double.builds.values() if b["spec"]["revision"]["git"].get("commit") == sha)
        assert build["spec"]["revision"]["git"]["message"] == "train longer"
        assert (
            out.getvalue()
            == f"atlas: local-openshift: webhook started build {build['metadata']['name']} of {sha[:12]}\n"
        )

        count = len(double.builds)
        out = io.StringIO()
        notify_webhooks(clusters, ("local-openshift",), sha, "refs/heads/feature", out)
        assert "webhook built nothing: skipping build. Branch reference from 'refs/heads/feature'" in out.getvalue()
        secret = clusters / "local-openshift" / "webhook-secret.yaml"
        secret.write_text(secret.read_text().replace("local-double-webhook-secret", "wrong"))
        out = io.StringIO()
        notify_webhooks(clusters, ("local-openshift",), sha, "refs/heads/main", out)
        assert out.getvalue() == (
            "atlas: local-openshift: webhook not delivered: local-openshift: the BuildConfig webhook refused the push "
            '(401): the webhook "github" for "atlas-biggan" did not accept your secret\n'
        )
        assert len(double.builds) == count
