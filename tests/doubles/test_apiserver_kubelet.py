"""The double's kubelet: a Build exports the pushed commit, a Job's pod really runs it here.

A small git repository plays the application: its commit is built (exported) by the Build
the GitHub webhook starts, and the Job's pod runs its script as a local process, with the
volumes as folders. Everything read back goes through the real Python client and kubectl.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

pytest.importorskip("kubernetes")

from kubernetes import client, config  # noqa: E402

from bench.environments.load import CLUSTERS_DIR  # noqa: E402
from tests.doubles.apiserver.kubelet import Kubelet  # noqa: E402
from tests.doubles.kubectl_fixture import needs_kubectl, started  # noqa: E402
from tests.doubles.test_apiserver_webhooks import GITHUB, SECRET, hook_url, post, push_event  # noqa: E402

pytestmark = needs_kubectl
NS = "atlas-biggan"
BASES = CLUSTERS_DIR / "_bases" / "openshift"

SCRIPT = """\
import os, sys, time
print("hello from", os.environ["POD_NAME"], flush=True)
time.sleep(float(sys.argv[2]))
with open(os.path.join(sys.argv[1], "out.txt"), "w") as fh:
    fh.write(open("/data-not-mapped" if False else os.path.join(os.environ["DATA"], "in.txt")).read())
sys.exit(int(sys.argv[3]))
"""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def app(tmp_path: Path) -> tuple[Path, str]:
    repo = tmp_path / "app"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "job.py").write_text(SCRIPT)
    git(repo, "add", "job.py")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "job")
    return repo, git(repo, "rev-parse", "HEAD")


@pytest.fixture
def cluster(tmp_path: Path, app):
    for double, kubectl in started(tmp_path / "api"):
        kubelet = Kubelet(double, tmp_path / "node", source=app[0])
        try:
            yield double, kubectl, kubelet
        finally:
            kubelet.stop()
            assert kubelet.errors == []


def wait_for(check, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"not reached in {timeout} s")


def job_body(name: str, image: str, seconds: float, code: int, backoff: int = 0) -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "backoffLimit": backoff,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "initContainers": [
                        {
                            "name": "stage",
                            "image": image,
                            "command": ["sh", "-c", "echo staged > /data/in.txt"],
                            "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                        }
                    ],
                    "containers": [
                        {
                            "name": "train",
                            "image": image,
                            "command": ["python", "job.py", "/results/r1", str(seconds), str(code)],
                            "env": [
                                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                                {"name": "DATA", "value": "/data"},
                            ],
                            "volumeMounts": [
                                {"name": "results", "mountPath": "/results/r1", "subPath": "r1"},
                                {"name": "data", "mountPath": "/data", "readOnly": True},
                            ],
                        }
                    ],
                    "volumes": [
                        {"name": "results", "persistentVolumeClaim": {"claimName": "atlas-results"}},
                        {"name": "data", "persistentVolumeClaim": {"claimName": "atlas-data"}},
                    ],
                }
            },
        },
    }


def test_a_pushed_commit_is_built_and_its_job_pod_runs_here(cluster, app, tmp_path):
    double, kubectl, kubelet = cluster
    repo, sha = app
    kubectl("apply", "-f", str(BASES / "webhook-rolebinding.yaml"))
    bc = json.loads(kubectl("create", "--dry-run=client", "-f", str(BASES / "buildconfig.yaml"), "-o", "json").stdout)
    bc["spec"]["source"]["git"]["uri"] = repo.as_uri()
    bc["spec"]["triggers"] = [{"type": "GitHub", "github": {"secret": SECRET}}]
    kubectl("create", "-f", "-", stdin=json.dumps(bc))
    code, build = post(double, hook_url(), push_event(sha=sha), GITHUB)
    assert code == 200
    name = build["metadata"]["name"]
    done = wait_for(
        lambda: double.builds[name]["status"].get("phase") in ("Complete", "Failed") and double.builds[name]
    )
    assert done["status"]["phase"] == "Complete", done["status"]
    assert (tmp_path / "node" / "images" / name / "job.py").read_text() == SCRIPT
    notes = [e["message"] for e in double.events_for(name) if e["reason"] == "BuildNote"]
    assert notes and (f"the checkout of {sha}" in notes[0] or "podman built" in notes[0])
    digest = done["status"]["output"]["to"]["imageDigest"]
    image = f"{done['status']['outputDockerImageReference'].rsplit(':', 1)[0]}@{digest}"

    api = config.new_client_from_config(str(double.volume.parent / "kubeconfig"))
    batch, core = client.BatchV1Api(api), client.CoreV1Api(api)
    batch.create_namespaced_job(NS, job_body("ok", image, 1.5, 0))
    wait_for(lambda: (batch.read_namespaced_job("ok", NS).status.conditions or [None])[-1], 120)
    job = batch.read_namespaced_job("ok", NS)
    assert job.status.conditions[-1].type == "Complete" and job.status.succeeded == 1
    (pod,) = core.list_namespaced_pod(NS, label_selector="job-name=ok").items
    state = pod.status.container_statuses[0].state.terminated
    # the job sleeps 1.5 s; a container's times are whole seconds (RFC 3339 as the API writes
    # them), so the span read back is 1 s or more, never less
    assert state.exit_code == 0 and 1 <= (state.finished_at - state.started_at).total_seconds() <= 30
    assert pod.status.init_container_statuses[0].state.terminated.exit_code == 0
    assert (tmp_path / "node" / "claims" / "atlas-results" / "r1" / "out.txt").read_text() == "staged\n"
    reasons = [e["reason"] for e in double.events_for(pod.metadata.name)]
    assert reasons[:2] == ["Scheduled", "Pulling"] and "Pulled" in reasons and reasons.count("Started") == 2
    logs = kubectl("logs", pod.metadata.name).stdout
    assert logs == f"hello from {pod.metadata.name}\n"


def test_a_failing_pod_fails_its_job_with_the_real_exit_code(cluster, app, tmp_path):
    double, kubectl, kubelet = cluster
    api = config.new_client_from_config(str(double.volume.parent / "kubeconfig"))
    batch, core = client.BatchV1Api(api), client.CoreV1Api(api)
    batch.create_namespaced_job(NS, job_body("bad", "app:latest", 0, 3, backoff=1))  # no digest: the checkout
    wait_for(lambda: (batch.read_namespaced_job("bad", NS).status.conditions or [None])[-1], 120)
    job = batch.read_namespaced_job("bad", NS)
    assert job.status.conditions[-1].type == "Failed" and job.status.failed == 2
    pods = core.list_namespaced_pod(NS, label_selector="job-name=bad").items
    assert sorted(p.status.container_statuses[0].state.terminated.exit_code for p in pods) == [3, 3]


def test_an_image_no_build_made_backs_off(cluster):
    double, kubectl, kubelet = cluster
    api = config.new_client_from_config(str(double.volume.parent / "kubeconfig"))
    client.BatchV1Api(api).create_namespaced_job(NS, job_body("nobuild", "x@sha256:" + "0" * 64, 0, 0))
    pod = wait_for(lambda: next(iter(double.job_pods("nobuild")), None))
    wait_for(lambda: any(e["reason"] == "BackOff" for e in double.events_for(pod["metadata"]["name"])))
    waiting = double.pods[pod["metadata"]["name"]]["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting["reason"] == "ImagePullBackOff"


def test_deleting_a_running_job_stops_its_process(cluster, tmp_path):
    double, kubectl, kubelet = cluster
    api = config.new_client_from_config(str(double.volume.parent / "kubeconfig"))
    client.BatchV1Api(api).create_namespaced_job(NS, job_body("long", "app:latest", 300, 0))
    pod = wait_for(lambda: next(iter(double.job_pods("long")), None))
    name = pod["metadata"]["name"]
    wait_for(lambda: "running" in pod["status"]["containerStatuses"][0]["state"], 60)
    proc = kubelet.procs[name]
    kubectl("delete", "job", "long", "--wait=false")
    wait_for(lambda: proc.poll() is not None, 30)
    assert name not in double.pods and proc.returncode != 0
