"""The real `kubectl` against the API double: each row of issue 20's table, the refusal and the success.

One double serves the whole module (objects have distinct names per test); the namespace
test has its own. What each test expects is what a real API server answers; the rule each
refusal comes from is cited beside it in tests/doubles/apiserver/.
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

from bench.environments.load import CLUSTERS_DIR  # noqa: E402
from tests.doubles.kubectl_fixture import KUBECTL, needs_kubectl, started  # noqa: E402

MOC = CLUSTERS_DIR / "moc"
BASES = CLUSTERS_DIR / "_bases" / "openshift"
pytestmark = needs_kubectl


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from started(tmp_path_factory.mktemp("api"))


@pytest.fixture
def double(cluster):
    return cluster[0]


@pytest.fixture
def kubectl(cluster):
    return cluster[1]


def job_manifest(name: str, **changes) -> dict:
    job = yaml.safe_load((MOC / "job.yaml").read_text())
    del job["metadata"]["generateName"]
    job["metadata"]["name"] = name
    for path, value in changes.items():
        node = job
        *parents, last = path.split(".")
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        node[int(last) if isinstance(node, list) else last] = value
    return job


def write(tmp_path: Path, name: str, obj: dict) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(obj))
    return str(path)


def test_server_side_apply_creates_and_a_second_manager_conflicts(kubectl, double, tmp_path):
    stream = yaml.safe_load((BASES / "imagestream.yaml").read_text())
    stream["metadata"]["name"] = "ssa"
    first = write(tmp_path, "is.yaml", stream)
    assert (
        kubectl("apply", "--server-side", "-f", first).stdout.strip()
        == "imagestream.image.openshift.io/ssa serverside-applied"
    )
    managed = double.store["imagestreams"]["ssa"]["metadata"]["managedFields"]
    assert [(m["manager"], m["operation"]) for m in managed] == [("kubectl", "Apply")]
    assert managed[0]["fieldsV1"] == {"f:spec": {"f:lookupPolicy": {"f:local": {}}}}
    stream["spec"]["lookupPolicy"]["local"] = False
    second = write(tmp_path, "is2.yaml", stream)
    refused = kubectl("apply", "--server-side", "--field-manager=ci", "-f", second, check=False)
    assert refused.returncode == 1
    assert (
        'Apply failed with 1 conflict: conflict with "kubectl" using image.openshift.io/v1: .spec.lookupPolicy.local'
        in refused.stderr
    )
    assert double.store["imagestreams"]["ssa"]["spec"]["lookupPolicy"]["local"] is True
    kubectl("apply", "--server-side", "--field-manager=ci", "--force-conflicts", "-f", second)
    assert double.store["imagestreams"]["ssa"]["spec"]["lookupPolicy"]["local"] is False
    owners = {m["manager"] for m in double.store["imagestreams"]["ssa"]["metadata"]["managedFields"]}
    assert owners == {"ci"}


def test_apply_of_a_changed_image_is_refused_and_the_job_kept_whole(kubectl, double, tmp_path):
    kubectl("apply", "-f", write(tmp_path, "job.yaml", job_manifest("imm")))
    changed = job_manifest("imm", **{"spec.template.spec.containers.0.image": "atlas-biggan:v2"})
    refused = kubectl("apply", "-f", write(tmp_path, "job2.yaml", changed), check=False)
    assert refused.returncode == 1 and 'The Job "imm" is invalid: spec.template: Invalid value' in refused.stderr
    assert "field is immutable" in refused.stderr
    (train,) = double.jobs["imm"]["spec"]["template"]["spec"]["containers"]
    assert train["image"] == "atlas-biggan:latest"
    assert len(train["env"]) == 6 and len(train["volumeMounts"]) == 5 and train["resources"]["limits"]["cpu"] == "16"
    # What a Job lets change: its labels. The strategic merge patch keeps every list whole.
    relabelled = job_manifest("imm", **{"metadata.labels.atlas/commit": "abc"})
    assert kubectl("apply", "-f", write(tmp_path, "job3.yaml", relabelled)).stdout.strip() == "job.batch/imm configured"
    job = double.jobs["imm"]
    assert job["metadata"]["labels"]["atlas/commit"] == "abc"
    assert job["spec"]["template"]["spec"]["containers"][0] == train


def test_dry_run_and_diff_never_persist(kubectl, double, tmp_path):
    kubectl("create", "-f", write(tmp_path, "job.yaml", job_manifest("dry")))
    before = json.dumps(double.jobs["dry"], sort_keys=True)
    out = kubectl(
        "patch",
        "job",
        "dry",
        "--type=merge",
        "-p",
        '{"metadata":{"labels":{"x":"y"}}}',
        "--dry-run=server",
        "-o",
        "jsonpath={.metadata.labels.x}",
    ).stdout
    assert out == "y"
    changed = write(tmp_path, "job2.yaml", job_manifest("dry", **{"metadata.labels.atlas/commit": "abc"}))
    diff = kubectl("diff", "-f", changed, check=False)
    assert diff.returncode == 1 and "+    atlas/commit: abc" in diff.stdout  # 1: differences found
    assert (
        kubectl("create", "-f", write(tmp_path, "new.yaml", job_manifest("dry-new")), "--dry-run=server").returncode
        == 0
    )
    kubectl("delete", "job", "dry", "--dry-run=server")
    assert json.dumps(double.jobs["dry"], sort_keys=True) == before and "dry-new" not in double.jobs


def test_json_patch_applies_and_a_missing_path_is_refused(kubectl, double, tmp_path):
    kubectl("create", "-f", write(tmp_path, "job.yaml", job_manifest("jp")))
    ops = json.dumps(
        [
            {"op": "replace", "path": "/metadata/labels/atlas~1commit", "value": "abc"},
            {"op": "add", "path": "/metadata/labels/extra", "value": "1"},
        ]
    )
    assert kubectl("patch", "job", "jp", "--type=json", "-p", ops).stdout.strip() == "job.batch/jp patched"
    assert {"atlas/commit": "abc", "extra": "1"}.items() <= double.jobs["jp"]["metadata"]["labels"].items()
    bad = kubectl(
        "patch", "job", "jp", "--type=json", "-p", '[{"op":"replace","path":"/metadata/nope/x","value":1}]', check=False
    )
    assert bad.returncode == 1 and "missing" in bad.stderr


def test_replace_puts_the_whole_object(kubectl, double, tmp_path):
    stream = yaml.safe_load((BASES / "imagestream.yaml").read_text())
    stream["metadata"]["name"] = "rep"
    kubectl("create", "-f", write(tmp_path, "is.yaml", stream))
    stream["spec"]["lookupPolicy"]["local"] = False
    assert (
        kubectl("replace", "-f", write(tmp_path, "is2.yaml", stream)).stdout.strip()
        == "imagestream.image.openshift.io/rep replaced"
    )
    assert double.store["imagestreams"]["rep"]["spec"]["lookupPolicy"] == {"local": False}
    # A Job read back (selector and all) replaces with a new label; a new image does not.
    kubectl("create", "-f", write(tmp_path, "job.yaml", job_manifest("rep")))
    live = json.loads(kubectl("get", "job", "rep", "-o", "json").stdout)
    live["metadata"]["labels"]["atlas/run-id"] = "r1"
    kubectl("replace", "-f", "-", stdin=json.dumps(live))
    assert double.jobs["rep"]["metadata"]["labels"]["atlas/run-id"] == "r1"
    live = json.loads(kubectl("get", "job", "rep", "-o", "json").stdout)
    live["spec"]["template"]["spec"]["containers"][0]["image"] = "other:1"
    refused = kubectl("replace", "-f", "-", stdin=json.dumps(live), check=False)
    assert refused.returncode == 1 and "field is immutable" in refused.stderr
    stale = dict(live, metadata=dict(live["metadata"], resourceVersion="1"))
    stale["spec"]["template"]["spec"]["containers"][0]["image"] = "atlas-biggan:latest"
    conflict = kubectl("replace", "-f", "-", stdin=json.dumps(stale), check=False)
    assert conflict.returncode == 1 and "the object has been modified" in conflict.stderr


def test_a_chunked_body_is_read(kubectl, double, tmp_path):
    double.add_buildconfig("chunky")
    request = tmp_path / "request.json"
    request.write_text(
        json.dumps({"kind": "BuildRequest", "apiVersion": "build.openshift.io/v1", "metadata": {"name": "chunky"}})
    )
    before = double.chunked_bodies
    out = kubectl(
        "create",
        "--raw",
        "/apis/build.openshift.io/v1/namespaces/atlas-biggan/buildconfigs/chunky/instantiate",
        "-f",
        str(request),
    ).stdout
    assert json.loads(out)["metadata"]["name"] == "chunky-1" and "chunky-1" in double.builds
    assert double.chunked_bodies == before + 1  # kubectl sent the file chunked


INVALID = {
    "restartPolicy Always": (
        {"spec.template.spec.restartPolicy": "Always"},
        'spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"',
    ),
    "backoffLimit -1": (
        {"spec.backoffLimit": -1},
        "spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0",
    ),
    "no containers": ({"spec.template.spec.containers": []}, "spec.template.spec.containers: Required value"),
    "cpu lots": (
        {"spec.template.spec.containers.0.resources.requests.cpu": "lots"},
        "cannot be handled as a Job: quantities must match the regular expression",
    ),
    "memory limit below request": (
        {"spec.template.spec.containers.0.resources.limits.memory": "8Gi"},
        'resources.requests: Invalid value: "96Gi": must be less than or equal to memory limit of 8Gi',
    ),
    "name Atlas_Train-": (
        {"metadata.name": "Atlas_Train-"},
        'metadata.name: Invalid value: "Atlas_Train-": a lowercase RFC 1123 subdomain',
    ),
    "label value": (
        {"metadata.labels.atlas/commit": "not a valid label!"},
        'metadata.labels: Invalid value: "not a valid label!": a valid label must be an empty string',
    ),
    "mount of no volume": (
        {"spec.template.spec.containers.0.volumeMounts.0.name": "nowhere"},
        'spec.template.spec.containers[0].volumeMounts[0].name: Not found: "nowhere"',
    ),
    "imagePullPolicy Sometimes": (
        {"spec.template.spec.containers.0.imagePullPolicy": "Sometimes"},
        'imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"',
    ),
    "activeDeadlineSeconds -5": (
        {"spec.activeDeadlineSeconds": -5},
        "spec.activeDeadlineSeconds: Invalid value: -5: must be greater than or equal to 0",
    ),
}


@pytest.mark.parametrize("case", list(INVALID))
def test_an_invalid_job_is_refused(kubectl, double, tmp_path, case):
    changes, message = INVALID[case]
    name = "bad-" + case.split()[0].lower().replace("_", "")
    job = job_manifest(name, **changes)
    proc = kubectl("create", "-f", write(tmp_path, "job.yaml", job), check=False)
    assert proc.returncode == 1 and message in proc.stderr, proc.stderr
    assert job["metadata"]["name"] not in double.jobs


def test_the_valid_job_and_names_are_accepted(kubectl, double, tmp_path):
    assert kubectl("create", "-f", str(MOC / "job.yaml")).stdout.startswith("job.batch/atlas-biggan-train-")
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a;b"}, "stringData": {"k": "v"}}
    refused = kubectl("create", "-f", write(tmp_path, "s.yaml", secret), check=False)
    assert (
        refused.returncode == 1 and 'The Secret "a;b" is invalid: metadata.name: Invalid value: "a;b"' in refused.stderr
    )
    claim = yaml.safe_load((BASES / "pvc-data.yaml").read_text())
    claim["metadata"]["name"] = ".."
    refused = kubectl("create", "-f", write(tmp_path, "c.yaml", claim), check=False)
    assert refused.returncode == 1 and 'metadata.name: Invalid value: ".."' in refused.stderr
    secret["metadata"]["name"] = "a-b"
    claim["metadata"]["name"] = "claim-a"
    kubectl("create", "-f", write(tmp_path, "s2.yaml", secret))
    kubectl("create", "-f", write(tmp_path, "c2.yaml", claim))
    assert "a-b" in double.store["secrets"] and "claim-a" in double.store["persistentvolumeclaims"]


def test_validate_false_drops_an_unknown_field(kubectl, double, tmp_path):
    job = job_manifest("loose")
    job["spec"]["backofLimit"] = 4
    path = write(tmp_path, "job.yaml", job)
    strict = kubectl("create", "-f", path, check=False)
    assert strict.returncode == 1 and 'strict decoding error: unknown field "spec.backofLimit"' in strict.stderr
    kubectl("create", "--validate=false", "-f", path)
    assert "backofLimit" not in double.jobs["loose"]["spec"] and double.jobs["loose"]["spec"]["backoffLimit"] == 3


def test_short_names_and_categories(kubectl, double, tmp_path):
    # its own objects: on pytest-xdist the tests of this module may run on two workers
    double.add_buildconfig("chunky")
    kubectl("apply", "-f", write(tmp_path, "job.yaml", job_manifest("imm")))
    out = kubectl("get", "po,pvc,ns,sa,bc,is", "-o", "name").stdout.split()
    assert "namespace/atlas-biggan" in out and "buildconfig.build.openshift.io/chunky" in out
    resources = kubectl("api-resources", "--no-headers").stdout
    for short, kind in [
        ("po", "Pod"),
        ("pvc", "PersistentVolumeClaim"),
        ("ns", "Namespace"),
        ("sa", "ServiceAccount"),
        ("bc", "BuildConfig"),
        ("is", "ImageStream"),
    ]:
        assert any(line.split()[1] == short and line.split()[-1] == kind for line in resources.splitlines()), short
    everything = kubectl("get", "all", "-o", "name").stdout.split()
    assert "job.batch/imm" in everything and "buildconfig.build.openshift.io/chunky" in everything


def test_unknown_api_version_and_kind_have_no_match(kubectl, tmp_path):
    for field, value, message in [
        ("apiVersion", "batch/v2", 'no matches for kind "Job" in version "batch/v2"'),
        ("kind", "Jobb", 'no matches for kind "Jobb" in version "batch/v1"'),
    ]:
        job = job_manifest("nomatch")
        job[field] = value
        proc = kubectl("create", "-f", write(tmp_path, "job.yaml", job), check=False)
        assert proc.returncode == 1 and message in proc.stderr, proc.stderr


def test_get_jobs_columns_selector_and_watch_rows(kubectl, double, tmp_path):
    kubectl("create", "-f", write(tmp_path, "job.yaml", job_manifest("cols")))
    job = double.jobs["cols"]
    uid = job["metadata"]["uid"]
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert job["spec"]["template"]["metadata"]["labels"]["job-name"] == "cols"
    double.clock.advance(90)
    table = kubectl("get", "job", "cols").stdout.splitlines()
    assert table[0].split() == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert table[1].split() == ["cols", "Running", "0/1", "90s", "90s"]
    opened = double.watches_opened
    watch = subprocess.Popen(
        [KUBECTL, "get", "job", "cols", "-w", "--request-timeout=30s"],
        env=kubectl.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = watch.stdout.readline()  # the listed row: the watch is open from here on
        assert first.split()[:2] == ["NAME", "STATUS"]
        assert watch.stdout.readline().split()[:2] == ["cols", "Running"]
        # kubectl watches from "now" (resourceVersion 0) and skips that first event: change the
        # job only once its watch is open, as a person would see it on a cluster.
        deadline = time.monotonic() + 60
        while double.watches_opened == opened and time.monotonic() < deadline:
            time.sleep(0.05)
        double.run_job_pod("cols", pull_s=5, run_s=25)
        rows: list[list[str]] = []
        while not rows or rows[-1][1:2] != ["Complete"]:
            line = watch.stdout.readline()
            if not line:
                break
            rows.append(line.split())
    finally:
        watch.kill()
        watch.wait()
    # Every watch row keeps every column (the issue: they dropped STATUS).
    assert rows and all(len(r) == 5 for r in rows), rows
    assert rows[-1][:4] == ["cols", "Complete", "1/1", "2m"]


def test_server_version_matches_the_pinned_kubectl(kubectl):
    proc = kubectl("version", "-o", "json")
    versions = json.loads(proc.stdout)
    assert versions["serverVersion"]["minor"] == versions["clientVersion"]["minor"]
    assert "skew" not in proc.stderr.lower()


def test_delete_namespace_terminates_its_contents(tmp_path):
    for double, kubectl in started(tmp_path):
        kubectl("create", "-f", write(tmp_path, "job.yaml", job_manifest("doomed")))
        out = kubectl("delete", "namespace", "atlas-biggan", "--wait=false").stdout
        assert out.strip() == 'namespace "atlas-biggan" deleted'
        assert kubectl("get", "ns", "atlas-biggan", "-o", "jsonpath={.status.phase}").stdout == "Terminating"
        assert double.jobs == {}
        refused = kubectl("create", "-f", write(tmp_path, "job2.yaml", job_manifest("late")), check=False)
        assert refused.returncode == 1
        assert "unable to create new content in namespace atlas-biggan because it is being terminated" in refused.stderr
        double.clock.advance(1)  # the namespace controller finishes
        gone = kubectl("get", "ns", "atlas-biggan", check=False)
        assert gone.returncode == 1 and 'namespaces "atlas-biggan" not found' in gone.stderr
        again = kubectl("create", "-f", str(tmp_path / "job2.yaml"), check=False)
        assert again.returncode == 1 and 'namespaces "atlas-biggan" not found' in again.stderr


def test_describe_pod_shows_its_events_and_states(kubectl, double, tmp_path):
    kubectl("create", "-f", write(tmp_path, "job.yaml", job_manifest("desc")))
    pod = double.run_job_pod("desc", pull_s=42, run_s=10, exit_code=1)
    out = kubectl("describe", "pod", pod["metadata"]["name"]).stdout
    assert "Reason:       Error" in out and "Exit Code:    1" in out
    events = out.split("Events:", 1)[1]
    reasons = [line.split()[1] for line in events.splitlines()[3:] if line.strip()]
    assert reasons == ["Scheduled", "Pulling", "Pulled", "Created", "Started"]  # this pod's only
    assert '"atlas-biggan:latest" in 42s (42s including waiting)' in events


def test_a_job_name_too_long_for_its_label_is_refused(kubectl, double, tmp_path):
    name = "j" * 64  # a valid DNS subdomain, but the server copies it into the job-name label
    proc = kubectl("create", "-f", write(tmp_path, "job.yaml", job_manifest(name)), check=False)
    assert proc.returncode == 1 and "must be no more than 63 characters" in proc.stderr
    assert name not in double.jobs


def test_describe_pod_shows_its_init_container_and_the_image_already_present(kubectl, double, tmp_path):
    init = {"name": "run-folder", "image": "atlas-biggan:latest", "command": ["mkdir", "-p", "/results/r"]}
    kubectl(
        "create",
        "-f",
        write(tmp_path, "job.yaml", job_manifest("init", **{"spec.template.spec.initContainers": [init]})),
    )
    pod = double.run_job_pod("init", pull_s=7, stage_s=2, run_s=10)
    out = kubectl("describe", "pod", pod["metadata"]["name"]).stdout
    inits = out.split("Init Containers:", 1)[1].split("Containers:", 1)[0]
    assert "run-folder:" in inits and "Terminated" in inits and "Reason:       Completed" in inits
    assert 'Container image "atlas-biggan:latest" already present on machine' in out.split("Events:", 1)[1]
