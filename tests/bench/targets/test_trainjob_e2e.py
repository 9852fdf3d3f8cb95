"""A 2-node TrainJob of the smoke experiment, end to end through the API double.

The `torch-distributed` ClusterTrainingRuntime is applied with the real kubectl (the
admin's step), the run's TrainJob is created with kubectl too, queued for the double's
Kueue (created suspended, admitted within the quota of two pods), the double's Trainer makes
its JobSet, headless Service and Indexed Job, and its kubelet runs both node pods here for
real: torchrun on each, meeting at PET_MASTER_ADDR (node 0 under the headless Service)
and PET_MASTER_PORT, training the smoke preset with gloo. The kind then follows the
TrainJob, collects the record and reads its timeline through the Python client.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

pytest.importorskip("kubernetes")

from bench.environments.load import CLUSTERS_DIR, Environment  # noqa: E402
from bench.records.timeline import PHASES  # noqa: E402
from bench.targets import target_class  # noqa: E402
from bench.targets.base import JobSpec, RunState  # noqa: E402
from bench.targets.lifecycle import collect_run, wait  # noqa: E402
from bench.targets.manifests import SCHEMA_FILE  # noqa: E402
from tests.bench.gitops.test_hooks import SHORT  # noqa: E402
from tests.doubles.apiserver.kubelet import Kubelet  # noqa: E402
from tests.doubles.apiserver.kueue import Kueue  # noqa: E402
from tests.doubles.kubectl_fixture import needs_kubectl, started  # noqa: E402

pytestmark = [needs_kubectl, pytest.mark.slow]
ENV_DIR = CLUSTERS_DIR / "local-openshift"
RUNTIME = SCHEMA_FILE.parent / "kubeflow-trainer-torch-distributed.yaml"
RUN_ID = "20261127t120000-01234567-2nod"


def test_a_two_node_trainjob_of_smoke_runs_on_the_kubelet_and_is_collected_with_its_timeline(tmp_path: Path):
    for double, kubectl in started(tmp_path / "api"):
        kubelet = Kubelet(double, tmp_path / "node", source=CLUSTERS_DIR.parent)
        kueue = Kueue(double, {"cpu-cq": {"cpu": "2", "memory": "4Gi"}}, {"cpu-localqueue": "cpu-cq"})
        try:
            kubectl("apply", "-k", str(ENV_DIR))
            kubectl("apply", "-f", str(RUNTIME))
            data = yaml.safe_load((ENV_DIR / "env.yaml").read_text())
            data.update(
                kind="trainjob",
                runtime="torch-distributed",
                kubeconfig=str(tmp_path / "api" / "kubeconfig"),
                poll_interval_s=0.2,
                shape=dict(data["shape"], nodes=2),
            )
            target = target_class("trainjob")(Environment("local-openshift", "trainjob", ENV_DIR, data))
            commit = subprocess.run(
                ["git", "-C", str(CLUSTERS_DIR.parent), "rev-parse", "HEAD"], capture_output=True, text=True
            ).stdout.strip()
            spec = JobSpec(run_id=RUN_ID, experiment="smoke", commit=commit or "0" * 40, overrides=SHORT)
            manifest = target.trainjob(spec, "atlas:dev", "")  # no digest: the kubelet's checkout is the image
            kubectl("create", "-f", "-", stdin=json.dumps(manifest))
            name = manifest["metadata"]["name"]
            (finished,) = wait(target, [RUN_ID], timeout_s=600).values()
            pods = sorted(double.pods)
            record = collect_run(target, RUN_ID, tmp_path / "results", finished=finished).path
        finally:
            kueue.stop()
            kubelet.stop()
    assert kubelet.errors == []
    logs = {k: v[-2000:] for k, v in double.pod_logs.items()}
    assert finished.state is RunState.COMPLETED, (finished.detail, logs)
    # The Trainer's objects: the JobSet, its headless Service, one Indexed Job of two pods.
    assert double.jobsets[name]["metadata"]["ownerReferences"][0]["kind"] == "TrainJob"
    assert double.store["services"][name]["spec"]["clusterIP"] == "None"
    (job,) = [j for j in double.jobs.values() if j["metadata"]["name"] == f"{name}-node-0"]
    assert job["spec"]["completionMode"] == "Indexed" and job["spec"]["completions"] == 2
    node_pods = [p for p in pods if p.startswith(f"{name}-node-0-")]
    assert len(node_pods) == 2, pods
    env = {e["name"]: e for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["PET_NNODES"]["value"] == "2" and env["PET_NPROC_PER_NODE"]["value"] == "1"
    assert env["PET_MASTER_ADDR"]["value"] == f"{name}-node-0-0.{name}" and env["PET_MASTER_PORT"]["value"] == "29500"
    # The TrainJob's conditions as the Trainer sets them: resumed by Kueue, then the JobSet's end.
    conds = double.trainjobs[name]["status"]["conditions"]
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in conds] == [
        ("Suspended", "False", "Resumed", "TrainJob is resumed"),
        ("Complete", "True", "AllJobsCompleted", "jobset completed successfully"),
    ]
    assert double.trainjobs[name]["status"]["jobsStatus"][0]["succeeded"] == 1
    (workload,) = double.store["workloads"].values()  # Kueue admitted the queued TrainJob: 2 pods' quota
    assert workload["metadata"]["ownerReferences"][0]["name"] == name and workload["spec"]["podSets"][0]["count"] == 2
    assert [c["type"] for c in workload["status"]["conditions"]] == ["QuotaReserved", "Admitted", "Finished"]
    # The record: run.json from node 0, samples from both nodes, the TrainJob's scheduler facts.
    run = json.loads((record / "run.json").read_text())
    assert run["exit"]["status"] == "success", run["exit"]
    assert sorted(p.name for p in record.glob("samples-*.csv")) == [
        f"samples-{name}-node-0-0.csv",
        f"samples-{name}-node-0-1.csv",
    ]
    assert run["hosts"] == [f"{name}-node-0-0", f"{name}-node-0-1"]  # node 0 names both
    assert run["scheduler"]["kind"] == "openshift-trainjob" and run["scheduler"]["job_id"] == name
    assert run["shape"]["nodes"] == 2
    # The timeline: TrainJob created -> its JobSet -> node 0's pod, from the API server's times.
    timeline = run["timeline"]
    marks, phases = timeline["marks"], {p["phase"]: p for p in timeline["phases"]}
    assert marks["accepted"]["source"] == marks["granted"]["source"] == "kueue"  # the Workload's wait
    assert marks["jobset_created"]["source"] == marks["container_started"]["source"] == "api-server"
    assert marks["accepted"]["time"] <= marks["granted"]["time"] <= marks["jobset_created"]["time"] + 1
    assert marks["jobset_created"]["time"] <= marks["container_started"]["time"]
    assert list(phases) == list(PHASES)
    assert phases["queue"]["source"] == "kueue" and phases["train"]["seconds"] > 0
