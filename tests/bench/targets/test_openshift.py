"""The OpenShift target, driven through the real `kubernetes` client against a loopback
API double (tests/doubles/apiserver/) that validates every body as the API server does."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
from pathlib import Path

import pytest
import yaml

pytest.importorskip("kubernetes")
pytest.importorskip("kubernetes_validate")

from bench.environments.load import CLUSTERS_DIR, Environment  # noqa: E402
from bench.errors import AtlasError  # noqa: E402
from bench.targets import target_class  # noqa: E402
from bench.targets.base import JobSpec, RunState  # noqa: E402
from bench.targets.lifecycle import collect_run  # noqa: E402
from bench.targets.manifests import SCHEMA_FILE  # noqa: E402
from tests.doubles.apiserver import OpenShiftApiDouble  # noqa: E402

MOC = CLUSTERS_DIR / "moc"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
RUN_ID = "20261122t030000-01234567-abcd"


@pytest.fixture
def double(tmp_path: Path):
    volume = tmp_path / "pvc"
    volume.mkdir()
    api = OpenShiftApiDouble("atlas-biggan", volume, SCHEMA_FILE).start()
    yield api
    api.stop()
    # The API server would have warned of fields it dropped: the target sends none.
    assert api.warnings == []


def make_target(tmp_path: Path, double: OpenShiftApiDouble, token: str | None = None, **settings):
    kubeconfig = double.write_kubeconfig(tmp_path / f"kubeconfig-{token or 'ok'}", token=token)
    data = yaml.safe_load((MOC / "env.yaml").read_text())
    data.pop("queue")  # this double runs no Kueue: Jobs start unsuspended (test_apiserver_kueue.py has Kueue)
    data.update(
        kubeconfig=str(kubeconfig), poll_interval_s=0.01, build_timeout_s=settings.pop("build_timeout_s", 5), **settings
    )
    return target_class("openshift")(Environment("moc", "openshift", MOC, data))


def job_spec(run_id: str = RUN_ID) -> JobSpec:
    return JobSpec(run_id=run_id, experiment="smoke", commit=COMMIT, overrides=("train.max_iters=2",))


def posts(double: OpenShiftApiDouble, suffix: str) -> list:
    return [body for method, path, body in double.requests if method == "POST" and path.endswith(suffix)]


def test_submit_builds_the_commit_and_creates_a_job_by_digest(tmp_path, double):
    double.add_buildconfig("atlas-biggan")
    target = make_target(tmp_path, double)
    status = target.submit(job_spec())

    (request,) = posts(double, "/buildconfigs/atlas-biggan/instantiate")
    assert request["revision"] == {"type": "Git", "git": {"commit": COMMIT}}
    (job,) = double.jobs.values()
    digest = double.builds["atlas-biggan-1"]["status"]["output"]["to"]["imageDigest"]
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == f"image-registry.openshift-image-registry.svc:5000/atlas-biggan/atlas-biggan@{digest}"
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["ATLAS_IMAGE_DIGEST"] == digest and env["ATLAS_RUN_DIR"] == f"/results/{RUN_ID}"
    assert env["ATLAS_ENV"] == "moc" and env["ATLAS_EXPERIMENT"] == "smoke"
    assert "NVIDIA_VISIBLE_DEVICES" not in env
    assert env["ATLAS_GIT_SHA"] == COMMIT and env["ATLAS_RUN_ID"] == RUN_ID and float(env["ATLAS_SUBMIT_TIME"]) > 0
    run_dir = f"/results/{RUN_ID}"
    assert container["command"] == [
        "python", "-m", "bench", "record", "--kind", "openshift", "--scheduler", "kubernetes",
        "--run-dir", run_dir, "--env", "moc", "--",
        "python", "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=4",
        "-m", "workflows.biggan", "--experiment", "smoke", "--run-dir", run_dir, "--set", "train.max_iters=2",
    ]  # fmt: skip
    assert "args" not in container
    limits = {"cpu": "16", "memory": "96Gi", "nvidia.com/gpu": "4"}  # env.yaml shape: 1 node x 4 GPUs x (4 CPU, 24 GiB)
    assert container["resources"] == {"requests": limits, "limits": limits}
    dshm = next(v for v in job["spec"]["template"]["spec"]["volumes"] if v["name"] == "dshm")
    assert dshm["emptyDir"]["medium"] == "Memory"
    for labels in (job["metadata"]["labels"], job["spec"]["template"]["metadata"]["labels"]):
        assert labels["atlas/commit"] == COMMIT and labels["atlas/run-id"] == RUN_ID
    assert status.state is RunState.PENDING and status.scheduler_job_id == job["metadata"]["name"]

    # A second run of the same commit reuses the build: no new instantiate, a new Job.
    target.submit(job_spec("20261122t030500-01234567-beef"))
    assert len(posts(double, "/instantiate")) == 1 and len(double.jobs) == 2


def test_failed_build_is_a_clear_error(tmp_path, double):
    double.add_buildconfig("atlas-biggan")

    def fail(build):
        build["status"] = {
            "phase": "Failed",
            "reason": "DockerBuildFailed",
            "message": "Docker build strategy has failed.",
        }

    double.on_build = fail
    with pytest.raises(
        AtlasError,
        match=r"build atlas-biggan-1 failed: DockerBuildFailed.*oc -n atlas-biggan logs build/atlas-biggan-1",
    ):
        make_target(tmp_path, double).submit(job_spec())
    assert double.jobs == {}


def test_missing_buildconfig_names_the_fix(tmp_path, double):
    with pytest.raises(AtlasError, match=r"BuildConfig 'atlas-biggan' not found.*oc apply -k"):
        make_target(tmp_path, double).submit(job_spec())


def test_bad_token_and_forbidden_and_unreachable(tmp_path, double):
    double.add_buildconfig("atlas-biggan")
    with pytest.raises(AtlasError, match=r"401 Unauthorized.*oc login") as info:
        make_target(tmp_path, double, token="expired").submit(job_spec())
    assert "expired" not in str(info.value)  # credentials are never printed

    double.forbidden = {"jobs"}
    with pytest.raises(AtlasError, match=r"forbidden.*403.*cannot create resource \"jobs\".*edit"):
        make_target(tmp_path, double).submit(job_spec())

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    double.server.server_address = ("127.0.0.1", port)  # kubeconfig now points at a closed port
    with pytest.raises(AtlasError, match="cannot reach the OpenShift API"):
        make_target(tmp_path, double).status(RUN_ID)


@pytest.fixture
def submitted(tmp_path, double):
    double.add_buildconfig("atlas-biggan")
    target = make_target(tmp_path, double)
    target.submit(job_spec())
    return target, next(iter(double.jobs))


def test_states_pending_running_and_queue_wait(submitted, double):
    target, job = submitted
    assert target.status(RUN_ID).state is RunState.PENDING
    double.add_job_pod(job, "Pending", unschedulable="0/4 nodes are available: 4 Insufficient nvidia.com/gpu.")
    status = target.status(RUN_ID)
    assert status.state is RunState.PENDING and "Insufficient nvidia.com/gpu" in status.detail
    double.pods.clear()
    double.add_job_pod(job, "Running", started=time.time() + 30)
    status = target.status(RUN_ID)
    assert status.state is RunState.RUNNING
    assert 25 <= float(status.extra["queue_wait_s"]) <= 35


def test_image_pull_failure(submitted, double):
    target, job = submitted
    double.add_job_pod(job, "Pending", waiting="ImagePullBackOff")
    status = target.status(RUN_ID)
    assert status.state is RunState.FAILED and "ImagePullBackOff: the image cannot be pulled" in status.detail


def test_oom_killed_then_backoff_limit(submitted, double):
    target, job = submitted
    double.add_job_pod(job, "Failed", terminated="OOMKilled", exit_code=137)
    double.finish_job(job, "Failed", "BackoffLimitExceeded", failed=4)
    status = target.status(RUN_ID)
    assert status.state is RunState.FAILED
    assert "BackoffLimitExceeded" in status.detail and "OOMKilled" in status.detail and "memory" in status.detail


def test_eviction_then_resume(submitted, double):
    target, job = submitted
    double.add_job_pod(job, "Failed", terminated="Error", exit_code=75, evicted=True)
    double.add_job_pod(job, "Running")
    status = target.status(RUN_ID)
    assert status.state is RunState.RUNNING and "evicted" in status.detail and "resumes" in status.detail
    double.finish_job(job, "Complete")
    assert target.status(RUN_ID).state is RunState.COMPLETED


def test_deadline_exceeded(submitted, double):
    target, job = submitted
    double.add_job_pod(job, "Failed", terminated="Error", exit_code=143)
    double.finish_job(job, "Failed", "DeadlineExceeded")
    status = target.status(RUN_ID)
    assert status.state is RunState.FAILED and "activeDeadlineSeconds (86400 s)" in status.detail


def test_list_runs_and_cancel(submitted, double):
    target, job = submitted
    assert [r.run_id for r in target.list_runs(COMMIT)] == [RUN_ID]
    assert [r.run_id for r in target.list_runs(COMMIT[:8])] == [RUN_ID]
    assert target.list_runs("f" * 40) == []
    target.cancel(RUN_ID)
    assert double.deleted[-1][0] == f"jobs/{job}"
    assert double.deleted[-1][1]["propagationPolicy"] == "Foreground"
    with pytest.raises(AtlasError, match="no Job with run id"):
        target.status(RUN_ID)


def test_collect_streams_a_50mb_record_with_checksum(tmp_path, submitted, double):
    target, job = submitted
    double.add_job_pod(job, "Succeeded", terminated="Completed", started=time.time() - 5)
    with pytest.raises(AtlasError, match="collect it once it has finished"):
        collect_run(target, RUN_ID, tmp_path / "results")
    double.finish_job(job, "Complete")
    run_dir = double.volume / RUN_ID
    (run_dir / "ckpt").mkdir(parents=True)
    (run_dir / "run.json").write_text(
        json.dumps({"schema_version": 1, "run_id": RUN_ID, "scheduler": {"kind": "openshift"}})
    )
    (run_dir / "train.jsonl").write_text('{"event": "run_start", "time": 1.0}\n')
    big = os.urandom(50 * 1024 * 1024)
    (run_dir / "ckpt" / "state.pt").write_bytes(big)

    dest = tmp_path / "results" / "moc" / RUN_ID
    assert collect_run(target, RUN_ID, dest.parent.parent).path == dest
    assert hashlib.sha256((dest / "ckpt" / "state.pt").read_bytes()).digest() == hashlib.sha256(big).digest()
    record = json.loads((dest / "run.json").read_text())
    sched = record["scheduler"]
    assert sched["job_id"] == job and sched["kind"] == "openshift"
    assert sched["submit_time"] > 0 and sched["end_time"] >= sched["submit_time"] and "queue_wait_s" in sched
    (cmd,) = double.exec_commands
    assert cmd[:2] == ["sh", "-c"] and cmd[-2:] == ["/results", RUN_ID]
    (pod,) = posts(double, "/pods")
    assert pod["spec"]["volumes"][0]["persistentVolumeClaim"] == {"claimName": "atlas-results", "readOnly": True}
    assert not [p for p in double.pods if p.startswith("atlas-collect-")]  # collector deleted

    collect_run(target, RUN_ID, dest.parent.parent)  # idempotent: nothing fetched again
    assert len(double.exec_commands) == 1


def test_collect_without_run_json_is_a_clear_error(tmp_path, submitted, double):
    target, job = submitted
    double.finish_job(job, "Failed", "BackoffLimitExceeded")
    (double.volume / RUN_ID).mkdir()
    with pytest.raises(AtlasError, match="has no run.json"):
        collect_run(target, RUN_ID, tmp_path / "dest")
    assert not (tmp_path / "dest" / "moc" / RUN_ID).exists()


def test_bad_settings_are_named(tmp_path):
    data = yaml.safe_load((MOC / "env.yaml").read_text())
    data.update(namespace="", poll_interval_s=-1, job_template="nope.yaml")
    with pytest.raises(AtlasError, match=r"'namespace' must be.*'poll_interval_s' must be.*nope.yaml"):
        target_class("openshift")(Environment("moc", "openshift", MOC, data))


def test_invalid_job_template_is_rejected_before_any_call(tmp_path):
    folder = tmp_path / "moc"
    import shutil

    shutil.copytree(MOC, folder)
    job = folder / "job.yaml"
    job.write_text(job.read_text().replace("backoffLimit: 3", "backoffLimit: 3\n  restartPolicy: Never"))
    data = yaml.safe_load((folder / "env.yaml").read_text())
    with pytest.raises(AtlasError, match=r"job.yaml: Job/atlas-biggan-train-: spec: .*'restartPolicy' was unexpected"):
        target_class("openshift")(Environment("moc", "openshift", folder, data))


def test_no_credentials_is_a_reason_not_a_crash(tmp_path, monkeypatch):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    data = yaml.safe_load((MOC / "env.yaml").read_text())
    data["kubeconfig"] = str(tmp_path / "missing-kubeconfig")
    reason = target_class("openshift")(Environment("moc", "openshift", MOC, data)).available()
    assert reason and "no usable OpenShift credentials" in reason and "oc login" in reason


def test_waits_for_the_build_a_github_push_started(tmp_path, double):
    """The webhook already started a build of the commit: bench waits for it, builds nothing."""
    double.add_buildconfig("atlas-biggan")
    build = {
        "apiVersion": "build.openshift.io/v1",
        "kind": "Build",
        "metadata": {
            "name": "atlas-biggan-7",
            "namespace": "atlas-biggan",
            "creationTimestamp": "2026-11-22T02:00:00Z",
            "labels": {"buildconfig": "atlas-biggan"},
        },
        "spec": {
            "revision": {"type": "Git", "git": {"commit": COMMIT}},
            "strategy": {"type": "Docker"},
            "triggeredBy": [{"message": "GitHub WebHook"}],
        },
        "status": {"phase": "Running"},
    }
    double.builds["atlas-biggan-7"] = build
    target = make_target(tmp_path, double)
    gets = []

    def finish_later():
        while len([r for r in double.requests if r[1].endswith("/builds/atlas-biggan-7")]) < 3:
            time.sleep(0.01)
        gets.append(True)
        double.complete_build(build)

    import threading

    threading.Thread(target=finish_later, daemon=True).start()
    target.submit(job_spec())
    assert gets and posts(double, "/instantiate") == []
    (job,) = double.jobs.values()
    assert job["metadata"]["annotations"]["atlas/build"] == "atlas-biggan-7"


def test_build_timeout_names_the_setting(tmp_path, double):
    double.add_buildconfig("atlas-biggan")
    double.on_build = lambda build: build["status"].update(phase="Pending")
    with pytest.raises(AtlasError, match=r"still Pending after 0.2 s.*build_timeout_s"):
        make_target(tmp_path, double, build_timeout_s=0.2).submit(job_spec())


def test_collect_after_the_job_expired(tmp_path, submitted, double):
    """ttlSecondsAfterFinished deleted the Job: the record on the volume is still collected."""
    target, job = submitted
    double.jobs.clear()
    (double.volume / RUN_ID).mkdir()
    (double.volume / RUN_ID / "run.json").write_text(json.dumps({"schema_version": 1, "run_id": RUN_ID}))
    dest = collect_run(target, RUN_ID, tmp_path / "dest").path
    assert json.loads((dest / "run.json").read_text())["run_id"] == RUN_ID
    (pod,) = posts(double, "/pods")
    assert pod["spec"]["containers"][0]["image"] == "atlas-biggan:latest"


def test_each_job_mounts_only_its_own_run_folder(submitted, double):
    """subPath <run_id> at /results/<run_id>: one run's pod cannot rewrite another's record."""
    (job,) = posts(double, "/jobs")
    spec = job["spec"]["template"]["spec"]
    (train,) = spec["containers"]
    results = next(m for m in train["volumeMounts"] if m["name"] == "results")
    assert results == {"name": "results", "mountPath": f"/results/{RUN_ID}", "subPath": RUN_ID}
    assert {"name": "ATLAS_RUN_DIR", "value": f"/results/{RUN_ID}"} in train["env"]
    (init,) = spec["initContainers"]
    assert init["command"] == ["mkdir", "-p", f"/results/{RUN_ID}"] and init["image"] == train["image"]
    assert init["securityContext"]["readOnlyRootFilesystem"] is True
    assert next(m for m in train["volumeMounts"] if m["name"] == "data")["readOnly"] is True


def test_watches_stream_changes_and_expire_with_410(tmp_path, submitted, double):
    """The double's watches behave like the API server's: events after a resourceVersion,
    and 410 Gone once that version's history is compacted away (clients must re-list)."""
    from kubernetes import client, watch
    from kubernetes.client.exceptions import ApiException

    target, job = submitted
    batch = client.BatchV1Api(target.api_client())
    listed = batch.list_namespaced_job("atlas-biggan")
    double.finish_job(job, "Complete")
    events = [
        (e["type"], e["object"].metadata.name, [c.type for c in e["object"].status.conditions or []])
        for e in watch.Watch().stream(
            batch.list_namespaced_job,
            "atlas-biggan",
            resource_version=listed.metadata.resource_version,
            timeout_seconds=1,
        )
    ]
    # v1.31+: the job controller adds SuccessCriteriaMet before Complete.
    assert events == [("MODIFIED", job, ["SuccessCriteriaMet", "Complete"])]
    double.compact()
    with pytest.raises(ApiException) as info:
        for _ in watch.Watch().stream(
            batch.list_namespaced_job,
            "atlas-biggan",
            resource_version=listed.metadata.resource_version,
            timeout_seconds=1,
        ):
            pass
    assert info.value.status == 410
    # A fresh list gives a current version to watch from again.
    fresh = batch.list_namespaced_job("atlas-biggan").metadata.resource_version
    assert (
        list(watch.Watch().stream(batch.list_namespaced_job, "atlas-biggan", resource_version=fresh, timeout_seconds=1))
        == []
    )
