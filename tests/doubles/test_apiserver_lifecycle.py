"""What controllers and the kubelet write, read back through the real Python client, on the test's clock.

Issue 21's timeline reads exactly these fields: Build start/completion/duration, Job
startTime/completionTime/conditions, pod conditions' lastTransitionTime, container
startedAt/finishedAt, and the Events (Scheduled, Pulling, Pulled, Created, Started, BackOff).
Also: the entry point a person starts by hand, and `bench run --env moc` pointed at it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytest.importorskip("kubernetes")
pytest.importorskip("kubernetes_validate")

from kubernetes import client, config  # noqa: E402

from bench.environments.load import CLUSTERS_DIR  # noqa: E402
from tests.doubles.apiserver.tables import parse_time  # noqa: E402
from tests.doubles.kubectl_fixture import needs_kubectl, started  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
NS = "atlas-biggan"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from started(tmp_path_factory.mktemp("api"))


@pytest.fixture(scope="module")
def api(cluster):
    double, _ = cluster
    return config.new_client_from_config(str(double.volume.parent / "kubeconfig"))


def make_job(api, name: str, backoff: int = 3) -> client.V1Job:
    job = yaml.safe_load((CLUSTERS_DIR / "moc" / "job.yaml").read_text())
    del job["metadata"]["generateName"]
    job["metadata"]["name"] = name
    job["spec"]["backoffLimit"] = backoff
    return client.BatchV1Api(api).create_namespaced_job(NS, job)


def seconds(a, b) -> float:
    return (b - a).total_seconds()


def test_a_build_goes_new_pending_running_complete(cluster, api):
    double, _ = cluster
    double.add_buildconfig("life")
    double.on_build = lambda build: None  # stays New until the test moves it
    try:
        custom = client.CustomObjectsApi(api)
        from kubernetes.dynamic import DynamicClient

        request = {"kind": "BuildRequest", "apiVersion": "build.openshift.io/v1", "metadata": {"name": "life"}}
        bcs = DynamicClient(api).resources.get(api_version="build.openshift.io/v1", kind="BuildConfig")
        build = bcs.subresources["instantiate"].create(body=request, name="life", namespace=NS).to_dict()
    finally:
        double.on_build = double.complete_build
    name = build["metadata"]["name"]
    assert build["status"] == {"phase": "New"}
    double.clock.advance(4)
    double.set_build_phase(name, "Pending")
    double.clock.advance(6)
    double.set_build_phase(name, "Running")
    double.clock.advance(95)
    double.set_build_phase(name, "Complete", stages=(("FetchInputs", 5), ("Build", 80), ("PushImage", 9.5)))
    st = custom.get_namespaced_custom_object("build.openshift.io", "v1", NS, "builds", name)["status"]
    assert [(s["name"], parse_time(s["startTime"]) - parse_time(st["startTimestamp"])) for s in st["stages"]] == [
        ("FetchInputs", 0),
        ("Build", 5),
        ("PushImage", 85),
    ]
    assert st["stages"][-1]["durationMilliseconds"] == 9500
    assert st["phase"] == "Complete" and st["duration"] == 95 * 10**9  # nanoseconds, as openshift/api
    assert parse_time(st["completionTimestamp"]) - parse_time(st["startTimestamp"]) == 95
    assert parse_time(st["startTimestamp"]) - parse_time(build["metadata"]["creationTimestamp"]) == 10
    assert st["outputDockerImageReference"].endswith(f"/{NS}/life:latest") and st["output"]["to"]["imageDigest"]
    assert [e["reason"] for e in double.events_for(name)] == ["BuildStarted", "BuildCompleted"]


def test_a_job_pod_is_scheduled_pulls_starts_and_finishes(cluster, api):
    double, _ = cluster
    created = make_job(api, "life-ok")
    double.run_job_pod("life-ok", queue_s=3, pull_s=12.345, run_s=100)
    job = client.BatchV1Api(api).read_namespaced_job("life-ok", NS)
    assert seconds(created.metadata.creation_timestamp, job.status.start_time) == 0
    assert seconds(job.status.start_time, job.status.completion_time) == 115  # 3 + 12 (s resolution) + 100
    assert [c.type for c in job.status.conditions] == ["SuccessCriteriaMet", "Complete"]
    assert job.status.succeeded == 1 and job.status.active == 0
    (pod,) = client.CoreV1Api(api).list_namespaced_pod(NS, label_selector="job-name=life-ok").items
    conds = {c.type: c for c in pod.status.conditions}
    assert set(conds) == {"PodScheduled", "Initialized", "ContainersReady", "Ready"}
    assert all(c.last_transition_time is not None for c in conds.values())
    assert seconds(created.metadata.creation_timestamp, conds["PodScheduled"].last_transition_time) == 3
    state = pod.status.container_statuses[0].state.terminated
    assert state.exit_code == 0 and state.reason == "Completed" and seconds(state.started_at, state.finished_at) == 100
    assert pod.status.phase == "Succeeded"
    events = client.CoreV1Api(api).list_namespaced_event(NS, field_selector=f"involvedObject.name={pod.metadata.name}")
    mine = [e for e in events.items if e.involved_object.name == pod.metadata.name]
    assert [e.reason for e in mine] == ["Scheduled", "Pulling", "Pulled", "Created", "Started"]
    pulled = mine[2].message
    assert pulled.startswith('Successfully pulled image "atlas-biggan:latest" in 12.345s (12.345s including waiting).')
    assert mine[0].event_time is not None and mine[0].reporting_component == "default-scheduler"
    assert [e["reason"] for e in double.events_for("life-ok")] == ["SuccessfulCreate", "Completed"]


def test_an_image_pull_that_fails_backs_off(cluster, api):
    double, _ = cluster
    make_job(api, "life-pull")
    pod = double.schedule_pod("life-pull")
    double.pull_image(pod["metadata"]["name"], 30, fail="rpc error: code = NotFound desc = manifest unknown")
    read = client.CoreV1Api(api).read_namespaced_pod(pod["metadata"]["name"], NS)
    assert read.status.container_statuses[0].state.waiting.reason == "ImagePullBackOff"
    reasons = [e["reason"] for e in double.events_for(pod["metadata"]["name"])]
    assert reasons == ["Scheduled", "Pulling", "Failed", "Failed", "BackOff", "Failed"]


def test_a_failed_pod_past_the_backoff_limit_fails_the_job(cluster, api):
    double, _ = cluster
    make_job(api, "life-fail", backoff=0)
    double.run_job_pod("life-fail", pull_s=1, run_s=5, exit_code=1)
    job = client.BatchV1Api(api).read_namespaced_job("life-fail", NS)
    assert [(c.type, c.reason) for c in job.status.conditions] == [
        ("FailureTarget", "BackoffLimitExceeded"),
        ("Failed", "BackoffLimitExceeded"),
    ]
    assert job.status.failed == 1 and job.status.completion_time is None


def test_the_python_client_patches_a_job_label_and_keeps_its_template(cluster, api):
    double, _ = cluster
    make_job(api, "life-patch")
    template = double.jobs["life-patch"]["spec"]["template"]
    batch = client.BatchV1Api(api)
    batch.patch_namespaced_job("life-patch", NS, {"metadata": {"labels": {"atlas/run-id": "r2"}}})
    assert double.jobs["life-patch"]["metadata"]["labels"]["atlas/run-id"] == "r2"
    assert double.jobs["life-patch"]["spec"]["template"] == template
    with pytest.raises(client.ApiException) as refused:
        batch.patch_namespaced_job(
            "life-patch", NS, {"spec": {"template": {"spec": {"containers": [{"name": "train", "image": "x:1"}]}}}}
        )
    assert refused.value.status == 422 and "field is immutable" in refused.value.body


@needs_kubectl
def test_the_entry_point_prints_a_kubeconfig_kubectl_uses(tmp_path):
    from tests.doubles.kubectl_fixture import kubectl_runner

    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.doubles.apiserver", "--dir", str(tmp_path / "api")],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    try:
        lines = [proc.stdout.readline() for _ in range(2)]
        assert lines[0].startswith("API double serving https://127.0.0.1:")
        assert "a TEST DOUBLE of the OpenShift API server, not a cluster" in lines[0]  # issue 35: named as one
        kubeconfig = Path(lines[1].split("kubeconfig: ", 1)[1].strip())
        kubectl = kubectl_runner(kubeconfig, tmp_path)
        assert kubectl("get", "ns", "-o", "name").stdout.strip() == "namespace/atlas-biggan"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0


@needs_kubectl
def test_bench_run_moc_against_the_double(tmp_path):
    """What a person does by hand: the overlay applied with kubectl, then `bench run --no-wait --env moc`."""
    for double, kubectl in started(tmp_path / "api", empty=True):
        kubectl("apply", "-k", str(CLUSTERS_DIR / "moc"))
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        env = dict(os.environ)
        env.update(
            KUBECONFIG=kubectl.env["KUBECONFIG"], HOME=kubectl.env["HOME"], KUBECACHEDIR=kubectl.env["KUBECACHEDIR"]
        )
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "bench",
                "run",
                "--no-wait",
                "--env",
                "moc",
                "--experiment",
                "smoke",
                "--commit",
                commit,
                "--results",
                str(tmp_path / "results"),
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        # build 1 is the ConfigChange trigger's (no commit); bench started the commit's
        first, build = sorted(double.builds.values(), key=lambda b: b["metadata"]["name"])
        assert first["spec"]["triggeredBy"] == [{"message": "Build configuration change"}]
        assert build["spec"]["revision"]["git"]["commit"] == commit
        (job,) = double.jobs.values()
        assert job["spec"]["suspend"] is True  # moc's Kueue queue: it waits for admission
        assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "v100-localqueue"
        assert job["spec"]["template"]["spec"]["containers"][0]["image"].endswith(
            build["status"]["output"]["to"]["imageDigest"]
        )
        assert double.warnings == []


def test_init_containers_run_first_and_the_main_container_finds_the_image(cluster, api):
    """What issue 21's `staged` and `pull` marks read: the init container's terminated.finishedAt,
    Initialized after it, and the main container's Pulled "already present on machine"."""
    double, _ = cluster
    job = yaml.safe_load((CLUSTERS_DIR / "moc" / "job.yaml").read_text())
    del job["metadata"]["generateName"]
    job["metadata"]["name"] = "life-init"
    init = {"name": "run-folder", "image": "atlas-biggan:latest", "command": ["mkdir", "-p", "/results/r"]}
    job["spec"]["template"]["spec"]["initContainers"] = [init]
    client.BatchV1Api(api).create_namespaced_job(NS, job)
    pod = double.schedule_pod("life-init")
    core = client.CoreV1Api(api)
    waiting = core.read_namespaced_pod(pod["metadata"]["name"], NS).status
    assert waiting.init_container_statuses[0].state.waiting.reason == "PodInitializing"
    assert {c.type: c.status for c in waiting.conditions}["Initialized"] == "False"
    double.prepare_pod(pod["metadata"]["name"], pull_s=12, stage_s=4)
    double.start_container(pod["metadata"]["name"])
    read = core.read_namespaced_pod(pod["metadata"]["name"], NS).status
    done = read.init_container_statuses[0].state.terminated
    assert done.exit_code == 0 and seconds(done.started_at, done.finished_at) == 4
    initialized = {c.type: c for c in read.conditions}["Initialized"]
    assert initialized.status == "True" and initialized.last_transition_time == done.finished_at
    assert read.container_statuses[0].state.running.started_at == done.finished_at
    events = core.list_namespaced_event(NS, field_selector=f"involvedObject.name={pod['metadata']['name']}").items
    seen = [(e.reason, e.involved_object.field_path) for e in events]
    init_path, main_path = "spec.initContainers{run-folder}", "spec.containers{train}"
    assert seen == [
        ("Scheduled", None),
        ("Pulling", init_path),
        ("Pulled", init_path),
        ("Created", init_path),
        ("Started", init_path),
        ("Pulled", main_path),
        ("Created", main_path),
        ("Started", main_path),
    ]
    assert seconds(events[1].first_timestamp, events[2].first_timestamp) == 12
    assert events[5].message == 'Container image "atlas-biggan:latest" already present on machine'
