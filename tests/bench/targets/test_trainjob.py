"""The `trainjob` kind: its TrainJob (shape, runtime, queue) validated against the shipped
Kubeflow Trainer v2.3.0 CRD, created, followed, failed and cancelled through the API
double's Trainer with the real Python client; `bench validate` of both MOC variants.
(The 2-node run on the double's kubelet is test_trainjob_e2e.py.)"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest
import yaml

pytest.importorskip("kubernetes")
pytest.importorskip("kubernetes_validate")

from kubernetes import config, dynamic  # noqa: E402

from bench.environments.load import CLUSTERS_DIR, Environment  # noqa: E402
from bench.errors import AtlasError  # noqa: E402
from bench.targets import target_class  # noqa: E402
from bench.targets.base import RunState  # noqa: E402
from bench.targets.manifests import SCHEMA_FILE, validate_objects  # noqa: E402
from tests.bench.targets.test_openshift import COMMIT, RUN_ID, job_spec  # noqa: E402
from tests.doubles.apiserver import OpenShiftApiDouble  # noqa: E402
from tests.doubles.apiserver.kueue import Kueue  # noqa: E402
from tests.doubles.kubectl_fixture import needs_kubectl  # noqa: E402
from tests.doubles.test_apiserver_kubelet import wait_for  # noqa: E402

MOC_TRAINJOB = CLUSTERS_DIR / "moc-trainjob"
RUNTIME = SCHEMA_FILE.parent / "kubeflow-trainer-torch-distributed.yaml"
DIGEST = "sha256:" + "0" * 64


def moc_trainjob(**settings) -> object:
    """moc-trainjob on two nodes (its env.yaml keeps Satori's one-node shape): the multi-node TrainJob."""
    data = yaml.safe_load((MOC_TRAINJOB / "env.yaml").read_text())
    data["shape"] = {**data["shape"], "nodes": 2}
    data.update(settings)
    return target_class("trainjob")(Environment("moc-trainjob", "trainjob", MOC_TRAINJOB, data))


@pytest.fixture
def double(tmp_path: Path):
    (tmp_path / "pvc").mkdir()
    api = OpenShiftApiDouble("atlas-biggan", tmp_path / "pvc", SCHEMA_FILE).start()
    api.add_buildconfig("atlas-biggan")
    yield api
    api.stop()
    assert api.warnings == []  # the API server would have warned of fields it dropped: none sent


def on_double(tmp_path: Path, api: OpenShiftApiDouble, runtime: bool = True, **settings):
    kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig")
    if runtime:  # the cluster admin's step: the runtime Kubeflow Trainer ships
        client = dynamic.DynamicClient(config.new_client_from_config(str(kubeconfig)))
        resource = client.resources.get(api_version="trainer.kubeflow.org/v1alpha1", kind="ClusterTrainingRuntime")
        resource.create(body=yaml.safe_load(RUNTIME.read_text()))
    return moc_trainjob(kubeconfig=str(kubeconfig), poll_interval_s=0.01, build_timeout_s=5, **settings)


def test_the_trainjob_says_the_shape_the_runtime_and_the_queue():
    manifest = moc_trainjob().trainjob(job_spec(), "img@" + DIGEST, DIGEST)
    spec = manifest["spec"]
    assert manifest["apiVersion"] == "trainer.kubeflow.org/v1alpha1" and manifest["kind"] == "TrainJob"
    assert spec["runtimeRef"] == {"name": "torch-distributed", "apiGroup": "trainer.kubeflow.org",
                                  "kind": "ClusterTrainingRuntime"}  # fmt: skip
    trainer = spec["trainer"]
    assert trainer["numNodes"] == 2 and trainer["numProcPerNode"] == 4
    assert trainer["resourcesPerNode"]["limits"] == {"cpu": "16", "memory": "96Gi", "nvidia.com/gpu": "4"}
    cmd = trainer["command"]
    assert cmd[cmd.index("--") + 1 :][:8] == [
        "python", "-m", "torch.distributed.run", "--nnodes=2", "--nproc-per-node=4",
        "--node-rank=$(PET_NODE_RANK)", "--master-addr=$(PET_MASTER_ADDR)", "--master-port=$(PET_MASTER_PORT)",
    ]  # fmt: skip
    assert not [e for e in trainer["env"] if e["name"].startswith("PET_")]  # the Trainer's own
    # Kueue: labelled for the LocalQueue and created suspended.
    assert manifest["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "v100-localqueue" and spec["suspend"]
    # What the runtime lacks comes as a runtime patch of its `node` container and pod.
    (patch,) = spec["runtimePatches"]
    (node_job,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    pod = node_job["template"]["spec"]["template"]["spec"]
    (node,) = pod["containers"]
    assert node["name"] == "node" and {"name": "results", "mountPath": "/results"} in node["volumeMounts"]
    assert {v["name"] for v in pod["volumes"]} >= {"results", "data"} and pod["securityContext"]["runAsNonRoot"]
    assert validate_objects([manifest]) == []
    assert "queue-name" not in str(moc_trainjob(queue=None).trainjob(job_spec(), "i@" + DIGEST, DIGEST)["metadata"])


def test_a_wrong_field_fails_against_the_shipped_crd_with_its_path():
    manifest = moc_trainjob().trainjob(job_spec(), "img@" + DIGEST, DIGEST)
    broken = copy.deepcopy(manifest)
    broken["spec"]["trainer"]["numNodes"] = "2"
    broken["spec"]["trainer"]["numProcsPerNode"] = 4  # misspelt
    del broken["spec"]["runtimeRef"]
    problems = validate_objects([broken])
    name = manifest["metadata"]["name"]
    assert f"TrainJob/{name}: spec/trainer/numNodes: '2' is not of type 'integer'" in problems
    assert any("'numProcsPerNode' was unexpected" in p for p in problems)
    assert any("'runtimeRef' is a required property" in p for p in problems)


def test_submit_queue_follow_fail_and_cancel_a_trainjob_on_the_double(tmp_path, double):
    target = on_double(tmp_path, double)
    status = target.submit(job_spec())
    (name,) = double.trainjobs
    assert status.state is RunState.PENDING and status.scheduler_job_id == name and "2 nodes × 4 GPUs" in status.detail
    assert double.jobs == {} and double.jobsets == {}  # suspended: no Kueue has admitted it yet
    waiting = target.status(RUN_ID)
    assert waiting.state is RunState.PENDING and "waiting for Kueue to admit it (LocalQueue v100-localqueue)" in (
        waiting.detail
    )
    assert double.trainjobs[name]["status"]["conditions"][0]["reason"] == "Suspended"
    # Kueue admits its Workload (2 pods of 4 GPUs) and unsuspends it; the Trainer makes the
    # JobSet, its headless Service and its Job.
    kueue = Kueue(double, {"gpu-cq": {"cpu": "32", "memory": "192Gi", "nvidia.com/gpu": "8"}},
                  {"v100-localqueue": "gpu-cq"})  # fmt: skip
    try:
        wait_for(lambda: not double.trainjobs[name]["spec"].get("suspend"), 10)
    finally:
        kueue.stop()
    (workload,) = double.store["workloads"].values()
    assert (
        workload["spec"]["podSets"][0]["count"] == 2
        and workload["metadata"]["ownerReferences"][0]["kind"] == "TrainJob"
    )
    double.clock.advance(1)
    resumed = next(c for c in double.trainjobs[name]["status"]["conditions"] if c["type"] == "Suspended")
    assert (resumed["status"], resumed["reason"], resumed["message"]) == ("False", "Resumed", "TrainJob is resumed")
    assert list(double.jobsets) == [name] and double.store["services"][name]["spec"]["clusterIP"] == "None"
    assert list(double.jobs) == [f"{name}-node-0"]
    pods = double.indexed_pods(f"{name}-node-0")  # the job controller: one pod per node
    for pod in pods:
        double.start_container(pod)
    running = target.status(RUN_ID)
    assert running.state is RunState.RUNNING and "2 node pods" in running.detail
    assert [r.run_id for r in target.list_runs(COMMIT)] == [RUN_ID]
    marks = target.timeline_marks(RUN_ID, {})  # queue = the Workload's wait; then JobSet and node 0's pod
    assert marks["accepted"]["source"] == marks["granted"]["source"] == "kueue"
    assert marks["jobset_created"]["source"] == "api-server" and marks["container_started"]["time"] > 0
    double.finish_container(pods[1], exit_code=1)  # node 1 fails: its Job, then the JobSet
    double.clock.advance(1)
    failed = target.status(RUN_ID)
    assert failed.state is RunState.FAILED
    assert failed.detail.startswith("FailedJobs: jobset failed due to one or more job failures"), failed.detail
    target.cancel(RUN_ID)  # the TrainJob goes, and with it what the Trainer made of it
    assert double.trainjobs == {} and double.jobsets == {} and double.jobs == {} and double.pods == {}
    assert name not in double.store["services"]


def test_no_trainer_or_no_runtime_is_one_line_naming_the_fix(tmp_path, double):
    with pytest.raises(AtlasError) as no_runtime:
        on_double(tmp_path, double, runtime=False).submit(job_spec())
    text = str(no_runtime.value)
    assert (
        "\n" not in text
        and "no ClusterTrainingRuntime 'torch-distributed'" in text
        and "get clustertrainingruntimes" in text
    )
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "pvc").mkdir()
    bare = OpenShiftApiDouble("atlas-biggan", tmp_path / "bare" / "pvc", SCHEMA_FILE, trainer=False).start()
    try:
        bare.add_buildconfig("atlas-biggan")
        with pytest.raises(AtlasError) as absent:
            on_double(tmp_path / "bare", bare, runtime=False).submit(job_spec())
        assert "\n" not in str(absent.value) and "needs Kubeflow Trainer v2" in str(absent.value)
        assert bare.builds == {}  # nothing built for a run that cannot be submitted
    finally:
        bare.stop()


def test_the_webhook_refuses_a_trainjob_setting_torchruns_variables(tmp_path, double):
    target = on_double(tmp_path, double)
    manifest = target.trainjob(job_spec(), "img@" + DIGEST, DIGEST)
    manifest["spec"]["trainer"]["env"].append({"name": "PET_NNODES", "value": "3"})
    trainjobs = dynamic.DynamicClient(target.api_client()).resources.get(
        api_version="trainer.kubeflow.org/v1alpha1", kind="TrainJob"
    )
    with pytest.raises(Exception) as refused:
        trainjobs.create(body=manifest, namespace="atlas-biggan")
    assert refused.value.status == 403 and "must not have reserved envs" in str(refused.value.body)


@needs_kubectl
def test_bench_validate_accepts_the_trainjob_env_and_calls_pytorchjob_legacy(tmp_path: Path, capsys):
    from bench.cli import main

    for name in ("moc", "moc-trainjob", "_bases"):
        shutil.copytree(CLUSTERS_DIR / name, tmp_path / name)
    assert main(["validate", "--clusters", str(tmp_path), "--no-experiments", "moc", "moc-trainjob"]) == 0
    out = capsys.readouterr().out
    moc, trainjob = out.split("ok   env moc-trainjob")
    assert "ok   env moc\n  note: multi-node runs (shape.nodes > 1) of this kind are Kubeflow PyTorchJobs" in moc
    assert "`kind: trainjob` with `runtime: torch-distributed`" in moc and "note:" not in trainjob.split("warning")[0]
    # Two nodes write one run folder: a results volume that is not ReadWriteMany is refused.
    env_yaml = tmp_path / "moc-trainjob" / "env.yaml"
    env_yaml.write_text(env_yaml.read_text().replace("  nodes: 1\n", "  nodes: 2\n"))
    patch = tmp_path / "moc-trainjob" / "kustomization.yaml"
    patch.write_text(patch.read_text().replace("value: [ReadWriteMany]", "value: [ReadWriteOnce]"))
    assert main(["validate", "--clusters", str(tmp_path), "--no-experiments", "moc-trainjob"]) == 1
    assert "PVC atlas-results is not ReadWriteMany" in capsys.readouterr().out
