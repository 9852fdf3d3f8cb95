"""BuildConfig webhooks and ConfigChange on the API double, as OpenShift answers them.

The project's own manifests (clusters/_bases/openshift/: the BuildConfig, the `system:webhook`
RoleBinding) go in through the real kubectl; the webhook is called as GitHub calls it: an
HTTPS POST without a token, the secret in the URL.
"""

from __future__ import annotations

import http.client
import json
import ssl
from pathlib import Path

import pytest

pytest.importorskip("kubernetes_validate")

from bench.environments.load import CLUSTERS_DIR  # noqa: E402
from tests.doubles.kubectl_fixture import needs_kubectl, started  # noqa: E402

pytestmark = needs_kubectl
BASES = CLUSTERS_DIR / "_bases" / "openshift"
SECRET = "s3cret-0123456789"
SHA = "89abcdef0123456789abcdef0123456789abcdef"


@pytest.fixture
def cluster(tmp_path: Path):
    yield from started(tmp_path / "api")


def _setup(kubectl, rolebinding: bool = True) -> None:
    kubectl("apply", "-f", str(BASES / "buildconfig.yaml"))
    if rolebinding:
        kubectl("apply", "-f", str(BASES / "webhook-rolebinding.yaml"))
    # The secret as clusters/moc/README.md has one make it (the template, filled in).
    template = (CLUSTERS_DIR / "moc" / "webhook-secret.template.yaml").read_text()
    kubectl("apply", "-f", "-", stdin=template.replace("REPLACE-ME", SECRET))


def post(double, path: str, body: object, headers: dict[str, str], token: str | None = None) -> tuple[int, object]:
    ctx = ssl.create_default_context(cadata=double.ca.ca_pem.decode())
    conn = http.client.HTTPSConnection("127.0.0.1", double.server.server_address[1], context=ctx, timeout=30)
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    sent = dict(headers, **({"Authorization": f"Bearer {token}"} if token else {}))
    conn.request("POST", path, body=data, headers=sent)
    resp = conn.getresponse()
    raw = resp.read()
    conn.close()
    return resp.status, (json.loads(raw) if raw else None)


def hook_url(secret: str = SECRET, kind: str = "github", bc: str = "atlas-biggan") -> str:
    return f"/apis/build.openshift.io/v1/namespaces/atlas-biggan/buildconfigs/{bc}/webhooks/{secret}/{kind}"


def push_event(ref: str = "refs/heads/main", sha: str = SHA) -> dict:
    return {
        "ref": ref,
        "after": sha,
        "head_commit": {
            "id": sha,
            "message": "train longer",
            "author": {"name": "Ada", "email": "ada@example.org"},
            "committer": {"name": "Ada", "email": "ada@example.org"},
        },
    }


GITHUB = {"Content-Type": "application/json", "User-Agent": "GitHub-Hookshot/0", "X-GitHub-Event": "push"}


def test_config_change_starts_build_one_when_the_buildconfig_is_created(cluster):
    double, kubectl = cluster
    kubectl("apply", "-f", str(BASES / "buildconfig.yaml"))
    assert list(double.builds) == ["atlas-biggan-1"]
    build = double.builds["atlas-biggan-1"]
    assert build["spec"]["triggeredBy"] == [{"message": "Build configuration change"}]
    assert build["spec"]["source"]["git"]["ref"] == "main"
    assert double.buildconfigs["atlas-biggan"]["status"]["lastVersion"] == 1
    kubectl("apply", "-f", str(BASES / "buildconfig.yaml"))  # unchanged: no second build
    assert list(double.builds) == ["atlas-biggan-1"]


def test_github_push_builds_the_pushed_commit_without_a_token(cluster):
    double, kubectl = cluster
    _setup(kubectl)
    code, build = post(double, hook_url(), push_event(), GITHUB)
    assert code == 200 and build["kind"] == "Build" and build["metadata"]["name"] == "atlas-biggan-2"
    stored = double.builds["atlas-biggan-2"]
    assert stored["spec"]["revision"]["git"]["commit"] == SHA
    assert stored["spec"]["revision"]["git"]["author"] == {"name": "Ada", "email": "ada@example.org"}
    (cause,) = stored["spec"]["triggeredBy"]
    assert cause["message"] == "GitHub WebHook"
    assert cause["githubWebHook"]["secret"] == "<secret>" and cause["githubWebHook"]["revision"]["git"]["commit"] == SHA
    out = kubectl("get", "build", "atlas-biggan-2", "-o", "jsonpath={.spec.revision.git.commit}").stdout
    assert out == SHA


def test_wrong_secret_ping_other_branch_and_other_events_build_nothing(cluster):
    double, kubectl = cluster
    _setup(kubectl)
    before = set(double.builds)
    code, status = post(double, hook_url("wrong"), push_event(), GITHUB)
    assert code == 401 and status["reason"] == "Unauthorized"
    assert status["message"] == 'the webhook "github" for "atlas-biggan" did not accept your secret'
    code, status = post(double, hook_url(bc="nope"), push_event(), GITHUB)  # an unknown BuildConfig reads the same
    assert code == 401 and status["message"] == 'the webhook "github" for "nope" did not accept your secret'
    code, body = post(
        double, hook_url(), {"zen": "Keep it simple.", "hook_id": 1}, dict(GITHUB, **{"X-GitHub-Event": "ping"})
    )
    assert (code, body) == (200, None)
    code, status = post(double, hook_url(), push_event("refs/heads/feature"), GITHUB)
    assert code == 200 and status["status"] == "Success"
    assert (
        status["message"] == "skipping build. Branch reference from 'refs/heads/feature' does not match configuration"
    )
    code, status = post(double, hook_url(), {}, dict(GITHUB, **{"X-GitHub-Event": "issues"}))
    assert code == 400 and status["message"] == "Unknown X-GitHub-Event or X-Gogs-Event issues"
    code, status = post(double, hook_url(), push_event(), dict(GITHUB, **{"Content-Type": "text/plain"}))
    assert code == 400 and "unsupported Content-Type" in status["message"]
    code, status = post(double, hook_url(kind="bitbucket-ish"), push_event(), GITHUB)
    assert code == 404 and status["message"] == 'buildconfighook.build.openshift.io "bitbucket-ish" not found'
    assert set(double.builds) == before


def test_without_the_rolebinding_only_a_token_reaches_the_webhook(cluster):
    double, kubectl = cluster
    _setup(kubectl, rolebinding=False)
    code, status = post(double, hook_url(), push_event(), GITHUB)
    assert code == 403 and 'User "system:anonymous" cannot create resource "buildconfigs/webhooks"' in status["message"]
    code, status = post(double, hook_url(), push_event(), GITHUB, token="not-the-token")
    assert code == 401 and status["message"] == "Unauthorized"
    code, build = post(double, hook_url(), push_event(), GITHUB, token=double.token)
    assert code == 200 and build["spec"]["revision"]["git"]["commit"] == SHA


def test_generic_webhook_takes_git_uri_ref_commit(cluster):
    double, kubectl = cluster
    kubectl("apply", "-f", str(BASES / "webhook-rolebinding.yaml"))
    bc = json.loads(kubectl("create", "--dry-run=client", "-f", str(BASES / "buildconfig.yaml"), "-o", "json").stdout)
    bc["spec"]["triggers"] = [{"type": "Generic", "generic": {"secret": SECRET}}]
    kubectl("create", "-f", "-", stdin=json.dumps(bc))
    assert double.builds == {}  # no ConfigChange trigger, no build 1
    payload = {"git": {"uri": "https://example.org/atlas.git", "ref": "main", "commit": SHA}}
    code, build = post(double, hook_url(kind="generic"), payload, {"Content-Type": "application/json"})
    assert code == 200 and build["spec"]["revision"]["git"]["commit"] == SHA
    assert build["spec"]["triggeredBy"][0]["message"] == "Generic WebHook"
    code, status = post(
        double, hook_url(kind="generic"), {"git": {"ref": "dev", "commit": SHA}}, {"Content-Type": "application/json"}
    )
    assert code == 200 and status["message"].startswith("skipping build. Branch reference from 'dev'")
    code, status = post(double, hook_url(kind="github"), push_event(), GITHUB)  # no GitHub trigger on this one
    assert code == 401
    assert len(double.builds) == 1
