"""The real kubectl 1.37 against the API double: the rows of issue 35 where it met a server that was not 1.37.

Each test names what kubectl did before the double learnt the row and checks what a 1.37
server answers instead. One double serves the module; objects have distinct names per test.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
import yaml

pytest.importorskip("kubernetes_validate")
pytest.importorskip("cryptography")

from tests.doubles.kubectl_fixture import KUBECTL, needs_kubectl, started  # noqa: E402

pytestmark = needs_kubectl
NS = "atlas-biggan"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from started(tmp_path_factory.mktemp("api137"))


@pytest.fixture
def double(cluster):
    return cluster[0]


@pytest.fixture
def kubectl(cluster):
    return cluster[1]


def create_job(kubectl, tmp_path: Path, name: str, labels: dict[str, str] | None = None) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox:1.36"}]}}
        },
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(job))
    kubectl("create", "-f", str(path))


def wait_for_watch(double, opened: int) -> None:
    deadline = time.monotonic() + 60
    while double.watches_opened == opened and time.monotonic() < deadline:
        time.sleep(0.05)
    assert double.watches_opened > opened, "kubectl never opened its watch"


# -- WatchList: before, `kubectl wait` timed out even on a Complete Job -------------------------
def test_wait_returns_at_once_on_a_complete_job(kubectl, double, tmp_path):
    create_job(kubectl, tmp_path, "wl-done")
    double.run_job_pod("wl-done", pull_s=1, run_s=2)
    assert double.jobs["wl-done"]["status"]["conditions"][-1]["type"] == "Complete"
    started_at = time.monotonic()
    out = kubectl("wait", "--for=condition=complete", "job/wl-done", "--timeout=60s").stdout
    assert out.strip() == "job.batch/wl-done condition met"
    assert time.monotonic() - started_at < 20  # not the 60 s timeout


def test_wait_returns_when_a_running_job_completes(kubectl, double, tmp_path):
    create_job(kubectl, tmp_path, "wl-run")
    opened = double.watches_opened
    wait = subprocess.Popen(
        [KUBECTL, "wait", "--for=condition=complete", "job/wl-run", "--timeout=90s"],
        env=kubectl.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_watch(double, opened)
        time.sleep(0.5)
        assert wait.poll() is None, wait.communicate()  # still waiting: the Job runs
        double.run_job_pod("wl-run", pull_s=1, run_s=2)
        out, err = wait.communicate(timeout=60)
    finally:
        wait.kill()
    assert wait.returncode == 0, err
    assert out.strip() == "job.batch/wl-run condition met"


def test_a_watch_list_ends_its_initial_events_with_the_bookmark(kubectl, double, tmp_path):
    create_job(kubectl, tmp_path, "wl-raw")
    base = f"/apis/batch/v1/namespaces/{NS}/jobs"
    query = "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
    raw = kubectl("get", "--raw", f"{base}?{query}&fieldSelector=metadata.name%3Dwl-raw&timeoutSeconds=1").stdout
    events = [json.loads(line) for line in raw.splitlines()]
    assert [(e["type"], e["object"]["metadata"].get("name")) for e in events] == [
        ("ADDED", "wl-raw"),
        ("BOOKMARK", None),
    ]
    bookmark = events[1]["object"]
    assert bookmark["kind"] == "Job" and bookmark["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert int(bookmark["metadata"]["resourceVersion"]) >= int(events[0]["object"]["metadata"]["resourceVersion"])
    # The options ValidateListOptions refuses, with its messages.
    refused = kubectl("get", "--raw", f"{base}?watch=true&sendInitialEvents=true", check=False)
    assert refused.returncode == 1
    assert "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan" in refused.stderr
    listed = kubectl("get", "--raw", f"{base}?sendInitialEvents=true", check=False)
    assert "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list" in listed.stderr


# -- selectors: before, set-based label selectors and status.successful listed nothing --------
def names(kubectl, *args: str) -> list[str]:
    return kubectl("get", *args, "-o", "jsonpath={.items[*].metadata.name}").stdout.split()


def test_set_based_label_selectors(kubectl, double, tmp_path):
    create_job(kubectl, tmp_path, "sel-a", {"team": "a", "sel": "yes"})
    create_job(kubectl, tmp_path, "sel-b", {"team": "b", "sel": "yes"})
    create_job(kubectl, tmp_path, "sel-c", {"team": "c", "sel": "yes"})
    create_job(kubectl, tmp_path, "sel-none", {"sel": "yes"})
    assert names(kubectl, "jobs", "-l", "sel,team in (a,b)") == ["sel-a", "sel-b"]
    assert names(kubectl, "jobs", "-l", "sel,team notin (a,b)") == ["sel-c", "sel-none"]
    assert names(kubectl, "jobs", "-l", "sel,!team") == ["sel-none"]
    assert names(kubectl, "jobs", "-l", "sel,team") == ["sel-a", "sel-b", "sel-c"]
    assert names(kubectl, "jobs", "-l", "sel=yes,team!=a") == ["sel-b", "sel-c", "sel-none"]
    refused = kubectl("get", "jobs", "-l", "team in (a", check=False)
    assert refused.returncode == 1 and "Error from server (BadRequest)" in refused.stderr


def test_job_and_pod_field_selectors_and_the_unsupported_refused(kubectl, double, tmp_path):
    create_job(kubectl, tmp_path, "fs-done", {"fs": "yes"})
    create_job(kubectl, tmp_path, "fs-run", {"fs": "yes"})
    pod = double.run_job_pod("fs-done", pull_s=1, run_s=1)["metadata"]["name"]
    assert names(kubectl, "jobs", "-l", "fs", "--field-selector", "status.successful=1") == ["fs-done"]
    assert names(kubectl, "jobs", "-l", "fs", "--field-selector", "status.successful!=1") == ["fs-run"]
    assert names(kubectl, "jobs", "--field-selector", "metadata.name=fs-run") == ["fs-run"]
    assert names(kubectl, "pods", "-l", "job-name=fs-done", "--field-selector", "status.phase=Succeeded") == [pod]
    node = double.pods[pod]["spec"]["nodeName"]
    assert names(kubectl, "pods", "-l", "job-name=fs-done", "--field-selector", f"spec.nodeName={node}") == [pod]
    assert names(kubectl, "pods", "-l", "job-name=fs-done", "--field-selector", "spec.nodeName=elsewhere") == []
    for kind, field in (("jobs", "status.succeeded=1"), ("pods", "metadata.labels=x"), ("jobs", "spec.parallelism=1")):
        refused = kubectl("get", kind, "--field-selector", field, check=False)
        assert refused.returncode == 1
        assert f"field label not supported: {field.split('=')[0]}" in refused.stderr, refused.stderr
    # A watch is refused the same way, before any event.
    watch = kubectl("get", "jobs", "-w", "--field-selector", "status.active=1", "--request-timeout=10s", check=False)
    assert watch.returncode == 1 and "field label not supported: status.active" in watch.stderr


# -- protobuf bodies: before, `create job` and `create secret generic` failed with
# "the body of the request was in an unknown format" --------------------------------------------
def test_create_job_sends_protobuf_and_makes_the_job_its_json_would(kubectl, double):
    out = kubectl("create", "job", "pb-job", "--image=busybox:1.36", "--", "sh", "-c", "echo hi").stdout
    assert out.strip() == "job.batch/pb-job created"
    post = next(b for m, p, b in reversed(double.requests) if m == "POST" and p.endswith("/jobs"))
    assert isinstance(post, str) and post.startswith("k8s\x00")  # the protobuf envelope, not JSON
    as_json = kubectl(
        "create",
        "job",
        "json-job",
        "--image=busybox:1.36",
        "--dry-run=client",
        "-o",
        "json",
        "--",
        "sh",
        "-c",
        "echo hi",
    ).stdout
    kubectl("create", "-f", "-", stdin=as_json)
    by_proto, by_json = double.jobs["pb-job"]["spec"], double.jobs["json-job"]["spec"]
    by_json["template"]["spec"]["containers"][0]["name"] = "pb-job"
    for spec in (by_proto, by_json):
        del spec["selector"], spec["template"]["metadata"]
    assert by_proto == by_json
    assert by_proto["template"]["spec"]["containers"][0]["command"] == ["sh", "-c", "echo hi"]


def test_create_secret_generic_sends_protobuf_and_the_data_arrives(kubectl, double, tmp_path):
    token = tmp_path / "token"
    token.write_bytes(b"\x00\xffbinary")
    kubectl("create", "secret", "generic", "pb-secret", "--from-literal=user=atlas", f"--from-file=token={token}")
    secret = double.store["secrets"]["pb-secret"]
    assert secret["type"] == "Opaque"
    assert secret["data"] == {"user": "YXRsYXM=", "token": "AP9iaW5hcnk="}
    shown = kubectl("get", "secret", "pb-secret", "-o", "jsonpath={.data.user}").stdout
    assert shown == "YXRsYXM="
    again = kubectl("create", "secret", "generic", "pb-secret", "--from-literal=a=b", check=False)
    assert again.returncode == 1 and 'secrets "pb-secret" already exists' in again.stderr


# -- auth can-i: before, NotFound; the CI Role could not be checked -----------------------------
CI_RBAC = Path(__file__).parents[2] / "clusters" / "_bases" / "openshift" / "ci-rbac.yaml"
CI = f"system:serviceaccount:{NS}:atlas-ci"


@pytest.fixture(scope="module")
def moc(tmp_path_factory):
    """A fresh double with the moc overlay applied, as an admin sets up the cluster."""
    for double, kubectl in started(tmp_path_factory.mktemp("moc"), empty=True):
        kubectl("apply", "-k", str(CI_RBAC.parents[2] / "moc"))
        yield double, kubectl


def can_i(kubectl, *args: str) -> str:
    proc = kubectl("auth", "can-i", *args, f"--as={CI}", check=False)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.stdout.strip()


def test_auth_can_i_answers_per_the_ci_role(moc):
    _, kubectl = moc
    role = next(d for d in yaml.safe_load_all(CI_RBAC.read_text()) if d["kind"] == "Role")
    for rule in role["rules"]:
        for resource in rule["resources"]:
            plural, _, sub = resource.partition("/")
            group = rule["apiGroups"][0]
            target = f"{plural}.{group}" if group else plural
            for verb in rule["verbs"]:
                extra = [f"--subresource={sub}"] if sub else []
                assert can_i(kubectl, verb, target, *extra) == "yes", (verb, resource)
    for verb, target in (
        ("create", "secrets"),
        ("get", "secrets"),
        ("update", "jobs.batch"),
        ("patch", "jobs.batch"),
        ("delete", "buildconfigs.build.openshift.io"),
        ("create", "rolebindings.rbac.authorization.k8s.io"),
    ):
        assert can_i(kubectl, verb, target) == "no", (verb, target)
    # The training pods' own account has no rights at all; the double's token has all.
    other = kubectl("auth", "can-i", "get", "pods", f"--as=system:serviceaccount:{NS}:atlas-biggan", check=False)
    assert (other.returncode, other.stdout.strip()) == (1, "no")
    assert kubectl("auth", "can-i", "create", "secrets").stdout.strip() == "yes"


def test_subject_access_review_names_the_user_and_the_binding(moc, tmp_path):
    _, kubectl = moc
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": CI,
            "resourceAttributes": {"namespace": NS, "verb": "create", "group": "batch", "resource": "jobs"},
        },
    }
    path = tmp_path / "sar.json"
    path.write_text(json.dumps(review))
    out = kubectl("create", "--raw", "/apis/authorization.k8s.io/v1/subjectaccessreviews", "-f", str(path)).stdout
    status = json.loads(out)["status"]
    assert status["allowed"] is True
    assert status["reason"] == (
        f'RBAC: allowed by RoleBinding "atlas-ci/{NS}" of Role "atlas-ci" to ServiceAccount "atlas-ci/{NS}"'
    )
    review["spec"]["resourceAttributes"]["resource"] = "secrets"
    review["spec"]["resourceAttributes"]["group"] = ""
    path.write_text(json.dumps(review))
    out = kubectl("create", "--raw", "/apis/authorization.k8s.io/v1/subjectaccessreviews", "-f", str(path)).stdout
    assert json.loads(out)["status"] == {"allowed": False}


# -- -o wide: before, the same columns as without it -----------------------------------------------
def test_wide_output_adds_upstreams_columns(kubectl, double, tmp_path):
    create_job(kubectl, tmp_path, "wide-job")
    pod = double.run_job_pod("wide-job", pull_s=1, run_s=1)
    jobs = kubectl("get", "job", "wide-job", "-o", "wide").stdout.splitlines()
    assert jobs[0].split() == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    uid = double.jobs["wide-job"]["metadata"]["uid"]
    assert jobs[1].split()[5:] == ["main", "busybox:1.36", f"batch.kubernetes.io/controller-uid={uid}"]
    pods = kubectl("get", "pod", pod["metadata"]["name"], "-o", "wide").stdout.splitlines()
    assert pods[0].split() == [
        "NAME",
        "READY",
        "STATUS",
        "RESTARTS",
        "AGE",
        "IP",
        "NODE",
        "NOMINATED",
        "NODE",
        "READINESS",
        "GATES",
    ]
    assert pods[1].split()[5:] == ["<none>", pod["spec"]["nodeName"], "<none>", "<none>"]
    plain = kubectl("get", "job", "wide-job").stdout.splitlines()
    assert plain[0].split() == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]


# -- apply --prune: before, "no matches for kind ConfigMap" (the default allow-list) --------------
def test_apply_prune_with_the_default_allow_list(kubectl, double, tmp_path):
    folder = tmp_path / "applied"
    folder.mkdir()
    for name in ("prune-a", "prune-b"):
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": "prune"}}}
        (folder / f"{name}.yaml").write_text(yaml.safe_dump({**cm, "data": {"k": "v"}}))
    created = kubectl("apply", "--prune", "-l", "app=prune", "-f", str(folder))
    assert created.stdout.split("\n")[:2] == ["configmap/prune-a created", "configmap/prune-b created"]
    (folder / "prune-b.yaml").unlink()
    pruned = kubectl("apply", "--prune", "-l", "app=prune", "-f", str(folder))
    assert pruned.stdout.splitlines() == ["configmap/prune-a unchanged", "configmap/prune-b pruned"]
    assert sorted(double.store["configmaps"]) == ["prune-a"]
    # Listing Endpoints (in the allow-list) draws the deprecation warning a 1.33+ server sends.
    assert "Warning: v1 Endpoints is deprecated in v1.33+" in pruned.stderr
    # `kubectl create configmap` sends protobuf, as for Jobs and Secrets.
    kubectl("create", "configmap", "pb-cm", "--from-literal=x=y")
    assert double.store["configmaps"]["pb-cm"]["data"] == {"x": "y"}


# -- explain: before, every DESCRIPTION was <empty> ------------------------------------------------
@pytest.mark.parametrize(
    "field, expected",
    [
        ("job.spec.backoffLimit", "Specifies the number of retries before marking this job failed."),
        ("job.spec.template", "Describes the pod that will be created when executing a job."),
        ("imagestream.spec", "spec describes the desired state of this stream ImageStreamSpec represents options"),
        ("pytorchjob.spec", "Specification of the desired state of the PyTorchJob."),
    ],
)
def test_explain_shows_the_schemas_descriptions(kubectl, field, expected):
    out = kubectl("explain", field).stdout
    description = out.split("DESCRIPTION:", 1)[1]
    assert " ".join(description.split()).startswith(expected), out
