"""A Kubeflow Trainer v2 TrainJob (`trainer.kubeflow.org/v1alpha1`): its manifest and what its status says.

Why a TrainJob: Kubeflow Trainer v2 replaces the Training Operator's PyTorchJob (kept only
on training-operator's release-1.9 branch); Red Hat OpenShift AI documents only v2. A
TrainJob names a runtime (`runtimeRef`, e.g. the `torch-distributed`
ClusterTrainingRuntime) and says only what differs from it: the image, the command, the
environment, `numNodes`, `resourcesPerNode`, `numProcPerNode`. The Trainer controller
turns it into a JobSet (one Job of `numNodes` indexed pods, `<name>-node-0-<index>`, and a
headless Service `<name>` they meet through) and gives every pod PET_NNODES,
PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR (`<name>-node-0-0.<name>`) and
PET_MASTER_PORT (29500) (kubeflow/trainer v2.3.0 pkg/runtime/framework/plugins/torch).

What the env's batch Job template says that a TrainJob has no field for goes into a
`runtimePatches` entry (volumes, the pod's and the container's securityContext, the
volume mounts, the service account). The runtime's pod has no init container to patch, so
the pod mounts the whole results volume, not only its run's folder as the batch Job does.
"""

from __future__ import annotations

import copy
from typing import Any

from bench.targets.base import RunState
from bench.targets.kube_status import ts
from bench.targets.kueue import QUEUE_LABEL

API_GROUP, API_VERSION_NAME = "trainer.kubeflow.org", "v1alpha1"
API_VERSION, KIND = f"{API_GROUP}/{API_VERSION_NAME}", "TrainJob"
PLURAL = "trainjobs"
RUNTIME_KIND = "ClusterTrainingRuntime"
# What the Trainer's JobSet puts on every pod (kubernetes-sigs/jobset api/jobset/v1alpha2).
LABEL_JOBSET = "jobset.sigs.k8s.io/jobset-name"
LABEL_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
# The runtime's trainer container, the one the TrainJob's `trainer` fills in (constants.Node).
CONTAINER = "node"
REPLICATED_JOB = "node"
PATCH_MANAGER = "atlas.bench/trainjob"
# torchrun's variables the torch plugin reserves: a TrainJob that sets one is refused.
RESERVED_ENV = ("PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT")


def trainer_absent(env: str) -> str:
    """The one line `bench run` prints when the cluster serves no TrainJob."""
    return (
        f"{env}: kind trainjob needs Kubeflow Trainer v2, but the cluster serves no {API_VERSION} {KIND}: "
        "ask the cluster admin to install it (Red Hat OpenShift AI's Trainer component), "
        "or use `kind: openshift` (a batch Job; a PyTorchJob for shape.nodes > 1)"
    )


def trainjob_manifest(
    batch_job: dict[str, Any],
    runtime: str,
    nodes: int,
    procs_per_node: int,
    command: list[str],
    results_mount: str,
    queue: str | None,
) -> dict[str, Any]:
    """The TrainJob that runs the batch Job's pod on `nodes` nodes of runtime `runtime`."""
    job_spec = batch_job["spec"]
    template = copy.deepcopy(job_spec["template"])
    pod = template["spec"]
    containers = pod["containers"]
    train = next((c for c in containers if c.get("name") == "train"), containers[0])
    mounts = []
    for m in train.get("volumeMounts") or []:
        m = dict(m)
        if m.get("subPath") and m.get("mountPath", "").startswith(results_mount.rstrip("/") + "/"):
            m = {"name": m["name"], "mountPath": results_mount}  # the whole volume: no init container makes the folder
        mounts.append(m)
    node = {"name": CONTAINER, "volumeMounts": mounts}
    if train.get("securityContext"):
        node["securityContext"] = train["securityContext"]
    pod_patch: dict[str, Any] = {"containers": [node]}
    for key in ("serviceAccountName", "volumes", "securityContext", "nodeSelector", "tolerations", "affinity"):
        if pod.get(key):
            pod_patch[key] = pod[key]
    if "terminationGracePeriodSeconds" in pod:
        pod_patch["terminationGracePeriodSeconds"] = pod["terminationGracePeriodSeconds"]
    labels = (template.get("metadata") or {}).get("labels") or {}
    replicated = {"name": REPLICATED_JOB, "template": {"spec": {"template": {"spec": pod_patch}}}}
    if labels:
        replicated["template"]["spec"]["template"]["metadata"] = {"labels": dict(labels)}
    trainer: dict[str, Any] = {
        "image": train["image"],
        "command": command,
        "env": [e for e in train.get("env") or [] if e.get("name") not in RESERVED_ENV],
        "numNodes": nodes,
        "numProcPerNode": procs_per_node,
        "resourcesPerNode": train.get("resources") or {},
    }
    meta = copy.deepcopy(batch_job["metadata"])
    meta.get("labels", {}).pop(QUEUE_LABEL, None)
    spec: dict[str, Any] = {
        "runtimeRef": {"name": runtime, "apiGroup": API_GROUP, "kind": RUNTIME_KIND},
        "trainer": trainer,
        "runtimePatches": [
            {
                "manager": PATCH_MANAGER,
                "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [replicated]}}},
            }
        ],
    }
    if job_spec.get("activeDeadlineSeconds"):
        spec["activeDeadlineSeconds"] = job_spec["activeDeadlineSeconds"]
    if queue:  # Kueue admits TrainJobs as it does Jobs: labelled, created suspended
        meta.setdefault("labels", {})[QUEUE_LABEL] = queue
        spec["suspend"] = True
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": meta, "spec": spec}


def state_of(obj: dict[str, Any], pods: list[Any]) -> tuple[RunState, str]:
    """The run state the Trainer's conditions say (Suspended, Complete, Failed), else the pods'."""
    conds = {c.get("type"): c for c in (obj.get("status") or {}).get("conditions") or []}
    done = conds.get("Complete")
    if done and done.get("status") == "True":
        return RunState.COMPLETED, "succeeded"
    failed = conds.get("Failed")
    if failed and failed.get("status") == "True":
        return RunState.FAILED, f"{failed.get('reason') or 'Failed'}: {failed.get('message') or ''}".rstrip(": ")
    suspended = conds.get("Suspended")
    if (obj.get("spec") or {}).get("suspend") or (suspended and suspended.get("status") == "True"):
        queue = ((obj.get("metadata") or {}).get("labels") or {}).get(QUEUE_LABEL)
        return RunState.PENDING, f"suspended, waiting for Kueue to admit it (LocalQueue {queue})" if queue else (
            "suspended"
        )
    phases = [p.status.phase for p in pods if p.status]
    if phases and all(ph == "Running" for ph in phases):
        return RunState.RUNNING, f"Running ({len(phases)} node pods)"
    if "Running" in phases:
        return RunState.RUNNING, f"Running ({phases.count('Running')} of {len(phases)} node pods)"
    if not pods:
        return RunState.PENDING, "created, no JobSet pods yet"
    return RunState.PENDING, "node pods not running yet"


def scheduler_times(obj: dict[str, Any], pod_starts: list[float]) -> dict[str, Any]:
    """The run.json `scheduler` section of a TrainJob: submit = created, start = first container."""
    submit = ts((obj.get("metadata") or {}).get("creationTimestamp"))
    start = min(pod_starts) if pod_starts else None
    conds = (obj.get("status") or {}).get("conditions") or []
    end = next(
        (
            ts(c.get("lastTransitionTime"))
            for c in conds
            if c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        ),
        None,
    )
    return {
        "kind": "openshift-trainjob",
        "job_id": obj["metadata"]["name"],
        "submit_time": submit,
        "start_time": start,
        "end_time": end,
        "queue_wait_s": round(start - submit, 3) if start is not None and submit is not None else None,
    }
