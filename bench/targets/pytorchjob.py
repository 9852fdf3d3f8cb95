"""Multi-node runs on OpenShift as a Kubeflow PyTorchJob (`kubeflow.org/v1`).

Why this engine: Atlas schedules nothing itself. The Kubeflow Training Operator, which
Red Hat OpenShift AI ships, starts one pod per node (a Master and Workers), gives each
MASTER_ADDR, MASTER_PORT and its node RANK, and restarts or fails them as a whole. Each
pod runs `bench record -- torchrun --nnodes N --nproc-per-node G ...`, the same as one
Slurm node; node 0 (the Master) writes `run.json`, every pod its `samples-<pod>.csv`, all
on the shared results volume, which therefore has to be ReadWriteMany.

The manifest is made from the env's batch Job template (same image, volumes, resources,
security context), so a one-node Job and an N-node PyTorchJob differ only in the launcher.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar

from bench.targets.base import RunState, RunStatus
from bench.targets.kube_status import COMPONENT, LABEL_COMMIT, LABEL_RUN, ts
from bench.targets.launch import PYTORCHJOB_RENDEZVOUS, recorded_launch

API_VERSION, KIND = "kubeflow.org/v1", "PyTorchJob"
# Labels the operator puts on the pods it makes for a PyTorchJob.
LABEL_JOB_NAME = "training.kubeflow.org/job-name"
LABEL_REPLICA_TYPE = "training.kubeflow.org/replica-type"
# The operator finds the training container by this name (its port, its environment).
CONTAINER = "pytorch"
# What `bench validate` says of every env whose multi-node runs would be PyTorchJobs.
LEGACY_NOTE = (
    "multi-node runs (shape.nodes > 1) of this kind are Kubeflow PyTorchJobs (kubeflow.org/v1, Training Operator "
    "1.x), legacy since Kubeflow Trainer v2; the equivalent is a TrainJob: `kind: trainjob` with "
    "`runtime: torch-distributed` in env.yaml (clusters/moc-trainjob is moc's)"
)


def operator_absent(env: str, nodes: int) -> str:
    """The one line `bench run` prints when the cluster has no PyTorchJob API."""
    return (
        f"{env}: shape.nodes is {nodes}, which needs a Kubeflow PyTorchJob, but the cluster serves no "
        f"{API_VERSION} {KIND} (the Kubeflow Training Operator, part of Red Hat OpenShift AI, is not installed): "
        "ask the cluster admin to install it, or set shape.nodes: 1 in env.yaml"
    )


def pytorchjob_manifest(batch_job: dict[str, Any], nodes: int, command: list[str]) -> dict[str, Any]:
    """A PyTorchJob of `nodes` pods, each the batch Job's pod template running `command`."""
    template = copy.deepcopy(batch_job["spec"]["template"])
    pod = template["spec"]
    pod.pop("restartPolicy", None)  # the operator sets it from the replica's restartPolicy
    containers = pod["containers"]
    train = next((c for c in containers if c.get("name") == "train"), containers[0])
    train["name"] = CONTAINER
    train["command"] = command
    train.pop("args", None)
    job_spec = batch_job["spec"]
    run_policy = {"cleanPodPolicy": "None", "backoffLimit": job_spec.get("backoffLimit", 3)}
    for key in ("activeDeadlineSeconds", "ttlSecondsAfterFinished"):
        if key in job_spec:
            run_policy[key] = job_spec[key]
    replicas = {"Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": template}}
    if nodes > 1:
        replicas["Worker"] = {"replicas": nodes - 1, "restartPolicy": "OnFailure", "template": copy.deepcopy(template)}
    meta = copy.deepcopy(batch_job["metadata"])
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": meta,
        "spec": {"runPolicy": run_policy, "pytorchReplicaSpecs": replicas},
    }


def conditions(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in ((obj.get("status") or {}).get("conditions") or []) if c.get("status") == "True"]


def state_of(obj: dict[str, Any]) -> tuple[RunState, str]:
    """The run state the operator's conditions say (Created, Running, Restarting, Succeeded, Failed)."""
    current = {c["type"]: c for c in conditions(obj)}
    if "Succeeded" in current:
        return RunState.COMPLETED, "succeeded"
    if "Failed" in current:
        c = current["Failed"]
        return RunState.FAILED, f"{c.get('reason') or 'Failed'}: {c.get('message') or ''}".rstrip(": ")
    if "Restarting" in current:
        c = current["Restarting"]
        return RunState.RUNNING, f"restarting: {c.get('message') or c.get('reason') or ''}".rstrip(": ")
    if "Running" in current:
        return RunState.RUNNING, "Running"
    return RunState.PENDING, "created, pods not running yet" if "Created" in current else "no status yet"


def scheduler_times(obj: dict[str, Any], pod_starts: list[float]) -> dict[str, Any]:
    """The run.json `scheduler` section of a PyTorchJob: submit = created, start = first container."""
    submit = ts((obj.get("metadata") or {}).get("creationTimestamp"))
    start = min(pod_starts) if pod_starts else None
    status = obj.get("status") or {}
    end = ts(status.get("completionTime"))
    return {
        "kind": "openshift-pytorchjob",
        "job_id": obj["metadata"]["name"],
        "submit_time": submit,
        "start_time": start,
        "end_time": end,
        "queue_wait_s": round(start - submit, 3) if start is not None and submit is not None else None,
    }


class PyTorchJobRunner:
    """The PyTorchJob half of the Kubernetes target (mixed into KubernetesTarget).

    Expects the target's `env`, `namespace`, `shape`, `resource`, `_call`, `_core`, `job_manifest`,
    `_validate`, `_pod_notes` and `_stuck`.
    """

    env: Any
    namespace: str
    shape: Any
    validate_note: ClassVar[str] = LEGACY_NOTE

    def _pytorchjobs(self) -> Any:
        """The PyTorchJob resource of the dynamic client; one line when the operator is missing."""
        return self.resource(API_VERSION, KIND, operator_absent(self.env.name, self.shape.nodes))  # type: ignore[attr-defined]

    def _pytorchjob(
        self, job: Any, image: str, digest: str, build: str = "", nodes: int = 0, submitted: float | None = None
    ) -> dict[str, Any]:
        """The multi-node run: the batch Job's pod as Master and Workers, torchrun per node."""
        batch = self.job_manifest(job, image, digest, build, submitted)  # type: ignore[attr-defined]
        run_dir = f"{self.env.settings['results_mount'].rstrip('/')}/{job.run_id}"
        nodes = nodes or self.shape.nodes
        command = recorded_launch(
            self.env.name,
            job,
            run_dir,
            nodes,
            self.shape.gpus_per_node,
            rendezvous=PYTORCHJOB_RENDEZVOUS,
            recorder_options=self.recorder_options(),
        )
        manifest = pytorchjob_manifest(batch, nodes, command)
        self._validate(manifest)  # type: ignore[attr-defined]
        return manifest

    def _submit_pytorchjob(self, job: Any, submitted: float | None = None) -> RunStatus:
        kubeflow = self._pytorchjobs()  # before building: no operator, one line
        image, digest, build = self.image_for_commit(job.commit)  # type: ignore[attr-defined]
        manifest = self._pytorchjob(job, image, digest, build, submitted=submitted)
        return self._create_job("PyTorchJob", kubeflow, manifest, job, image, build, self.shape.label)

    def _create_job(
        self, kind: str, resource: Any, manifest: dict[str, Any], job: Any, image: str, build: str | None, label: str
    ) -> RunStatus:
        """Create a training job object (a PyTorchJob, a TrainJob) and say where its image came from."""
        created = self._call(  # type: ignore[attr-defined]
            f"creating {kind} {manifest['metadata']['name']}",
            resource.create,
            body=manifest,
            namespace=self.namespace,
        )
        origin = f"from build {build}" if build else f"with image {image}"
        return RunStatus(
            job.run_id,
            RunState.PENDING,
            f"{kind} ({label}) created {origin}",
            scheduler_job_id=created.metadata.name,
            commit=job.commit,
            extra={"image": image},
        )

    def _find_pytorchjob(self, run_id: str | None = None, commit: str | None = None) -> Any:
        """The PyTorchJob of `run_id` (or all of a commit, a list); None / [] on one-node envs."""
        if self.shape.nodes == 1:
            return None if run_id else []
        selector = f"{LABEL_RUN}={run_id}" if run_id else f"{COMPONENT}=training"
        listed = self._call(  # type: ignore[attr-defined]
            "listing PyTorchJobs",
            self._pytorchjobs().get,
            namespace=self.namespace,
            label_selector=selector,
        )
        items = [i for i in listed.to_dict().get("items", []) if LABEL_RUN in (i["metadata"].get("labels") or {})]
        if run_id:
            return items[0] if items else None
        return [i for i in items if not commit or i["metadata"]["labels"].get(LABEL_COMMIT, "").startswith(commit)]

    def _pytorchjob_pods(self, obj: dict[str, Any]) -> list[Any]:
        pods = self._call(  # type: ignore[attr-defined]
            "listing pods",
            self._core().list_namespaced_pod,  # type: ignore[attr-defined]
            namespace=self.namespace,
            label_selector=f"{LABEL_JOB_NAME}={obj['metadata']['name']}",
        ).items
        return sorted(pods, key=lambda p: (ts(p.metadata.creation_timestamp) or 0.0, p.metadata.name))

    def _pytorchjob_status(self, obj: dict[str, Any], pods: list[Any]) -> RunStatus:
        labels = obj["metadata"].get("labels") or {}
        state, detail = state_of(obj)
        notes = self._pod_notes(pods)  # type: ignore[attr-defined]
        if not state.finished:
            stuck = next((msg for msg in map(self._stuck, pods) if msg), "")  # type: ignore[attr-defined]
            if stuck:
                state, detail = RunState.FAILED, stuck
            for pod in pods:
                for cond in (pod.status.conditions or []) if pod.status else []:
                    if cond.type == "PodScheduled" and cond.status == "False":
                        notes.insert(0, f"{pod.metadata.name} {cond.reason}: {cond.message}")
        times = scheduler_times(obj, pod_starts(pods))
        return RunStatus(
            labels.get(LABEL_RUN, ""),
            state,
            "; ".join([detail, *notes]),
            scheduler_job_id=obj["metadata"]["name"],
            commit=labels.get(LABEL_COMMIT),
            extra={k: str(v) for k, v in times.items() if v is not None},
        )

    def _cancel_pytorchjob(self, obj: dict[str, Any]) -> None:
        self._call(  # type: ignore[attr-defined]
            f"deleting PyTorchJob {obj['metadata']['name']}",
            self._pytorchjobs().delete,
            name=obj["metadata"]["name"],
            namespace=self.namespace,
            body={"propagationPolicy": "Foreground"},
        )


def pod_starts(pods: list[Any]) -> list[float]:
    """When each container of these pods started (running or terminated), Unix seconds."""
    starts = []
    for p in pods:
        for cs in (p.status.container_statuses or []) if p.status else []:
            state = cs.state
            started = (state.running.started_at if state and state.running else None) or (
                state.terminated.started_at if state and state.terminated else None
            )
            if ts(started) is not None:
                starts.append(ts(started))
    return starts
