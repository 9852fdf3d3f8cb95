"""Kubeflow Trainer v2 and JobSet for the API double: a TrainJob becomes a JobSet, a headless
Service, one Indexed Job and its pods, and its status follows theirs.

As kubeflow/trainer v2.3.0 does it (https://github.com/kubeflow/trainer/tree/v2.3.0):
- admission (pkg/webhooks/trainjob_webhook.go, pkg/runtime/core/clustertrainingruntime.go,
  the torch plugin's Validate): the referenced ClusterTrainingRuntime must exist, the
  trainer's env must not set torchrun's reserved PET_* variables; refused as the webhook
  refuses (403, "admission webhook ... denied the request: ...");
- the controller builds the JobSet from the runtime's template with the TrainJob's
  `trainer` (image, command, args, env, resourcesPerNode, numNodes as the Job's
  parallelism and completions) and its `runtimePatches` (pod volumes, security context,
  service account; each named container's volumeMounts, env, securityContext); the torch
  plugin adds PET_NNODES, PET_NPROC_PER_NODE ("auto" without a GPU count becomes the CPU
  count), PET_NODE_RANK (the pod's completion-index annotation), PET_MASTER_ADDR
  (`<name>-node-0-0.<name>`), PET_MASTER_PORT (29500) and the container port 29500;
- JobSet (kubernetes-sigs/jobset v1alpha2): the headless Service `<name>` (publishNotReadyAddresses),
  the Job `<name>-node-0` (Indexed), pods with hostname `<job>-<index>` and subdomain `<name>`;
  its `Completed` (AllJobsCompleted, "jobset completed successfully") or `Failed`
  (FailedJobs, "jobset failed due to one or more job failures") condition;
- the TrainJob's status (pkg/runtime/framework/plugins/jobset Status): the JobSet's
  condition renamed `Complete` / `Failed`, `jobsStatus` from its replicatedJobsStatus;
  `Suspended` True while `spec.suspend`, then False (Resumed).

Not modelled: namespaced TrainingRuntimes, initializers, MPI/JAX/other plugins, retries of
a failed node pod (the first failure fails the Job and so the JobSet), runtime CRD
validation (runtimes and JobSets are stored as sent). Kueue admits TrainJobs in kueue.py.
"""

from __future__ import annotations

import copy
import secrets
from typing import Any

from tests.doubles.apiserver.errors import ApiError
from tests.doubles.apiserver.resources import JOBSET_GROUP

LABEL_JOBSET = "jobset.sigs.k8s.io/jobset-name"
LABEL_REPLICATED_JOB = "jobset.sigs.k8s.io/replicatedjob-name"
LABEL_JOB_INDEX = "jobset.sigs.k8s.io/job-index"
LABEL_ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
RESERVED = ("PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT")
PORT = 29500
WEBHOOK = "validator.trainjob.trainer.kubeflow.org"
POD_PATCH_FIELDS = (
    "serviceAccountName",
    "volumes",
    "imagePullSecrets",
    "securityContext",
    "nodeSelector",
    "affinity",
    "tolerations",
    "schedulingGates",
    "terminationGracePeriodSeconds",
)


def _owner(obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _upsert_env(env: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    names = {e["name"] for e in new}
    return [e for e in env if e["name"] not in names] + [copy.deepcopy(e) for e in new]


def _cpus(resources: dict[str, Any]) -> int:
    from tests.doubles.apiserver.kueue import quantity

    limits = resources.get("limits") or resources.get("requests") or {}
    return max(1, int(quantity(limits.get("cpu", 1))))


class Trainer:
    """Mixed into the double: needs store, record(), event(), clock, namespace, new_uid(), bind_pod()."""

    def admit_trainjob(self, obj: dict[str, Any]) -> None:
        """The Trainer's validating webhook, on create."""
        ref = (obj.get("spec") or {}).get("runtimeRef") or {}
        kind = ref.get("kind") or "ClusterTrainingRuntime"
        if (
            kind != "ClusterTrainingRuntime"
            or (ref.get("apiGroup") or "trainer.kubeflow.org") != "trainer.kubeflow.org"
        ):
            self._deny(f"unsupported runtime: {kind}.{ref.get('apiGroup') or 'trainer.kubeflow.org'}")
        name = ref.get("name", "")
        if name not in self.store["clustertrainingruntimes"]:
            self._deny(
                f'spec.RuntimeRef: Invalid value: {{"name":"{name}"}}: clustertrainingruntimes.trainer.kubeflow.org '
                f'"{name}" not found: specified clusterTrainingRuntime must be created before the TrainJob is created'
            )
        env = ((obj["spec"].get("trainer") or {}).get("env")) or []
        reserved = sorted({e.get("name") for e in env} & set(RESERVED))
        if reserved:
            self._deny(
                f"spec.trainer.env: Invalid value: must not have reserved envs, invalid envs configured: {reserved}"
            )

    @staticmethod
    def _deny(message: str) -> None:
        raise ApiError(403, "Forbidden", f'admission webhook "{WEBHOOK}" denied the request: {message}')

    # -- the controllers -----------------------------------------------------------------
    def sync_trainjobs(self) -> None:
        """Each TrainJob's JobSet (once it is not suspended), and its status from the JobSet's."""
        with self.changed:
            for tj in list(self.store.get("trainjobs", {}).values()):
                self._sync_one(tj)

    def _sync_one(self, tj: dict[str, Any]) -> None:
        name, spec = tj["metadata"]["name"], tj["spec"]
        status = tj.setdefault("status", {})
        conds = status.setdefault("conditions", [])
        suspended = next((c for c in conds if c["type"] == "Suspended"), None)
        before = copy.deepcopy(status)
        if spec.get("suspend"):
            if suspended is None or suspended["status"] != "True":
                self._set(conds, "Suspended", "True", "Suspended", "TrainJob is suspended")
        else:
            if suspended is not None and suspended["status"] == "True":
                self._set(conds, "Suspended", "False", "Resumed", "TrainJob is resumed")
            if name not in self.store["jobsets"]:
                self._create_jobset(tj)
            self._sync_jobset(name)
            jobset = self.store["jobsets"].get(name)
            if jobset is not None:
                for js_type, tj_type in (("Completed", "Complete"), ("Failed", "Failed")):
                    c = next((c for c in jobset["status"].get("conditions") or [] if c["type"] == js_type), None)
                    if c is not None and not any(x["type"] == tj_type for x in conds):
                        conds.append(dict(c, type=tj_type))
                status["jobsStatus"] = [
                    {k: r[k] for k in ("name", "ready", "succeeded", "failed", "active", "suspended")}
                    for r in jobset["status"].get("replicatedJobsStatus") or []
                ]
        if status != before:
            self.record("trainjobs", tj)

    def _set(self, conds: list[dict[str, Any]], kind: str, status: str, reason: str, message: str) -> None:
        conds[:] = [c for c in conds if c["type"] != kind]
        conds.append(
            {
                "type": kind,
                "status": status,
                "reason": reason,
                "message": message,
                "lastTransitionTime": self.clock.stamp(),
            }
        )

    def _create_jobset(self, tj: dict[str, Any]) -> None:
        name = tj["metadata"]["name"]
        runtime = self.store["clustertrainingruntimes"][tj["spec"]["runtimeRef"]["name"]]
        replicated = []
        for rj in copy.deepcopy(runtime["spec"]["template"]["spec"]["replicatedJobs"]):
            if (rj["template"].get("metadata") or {}).get("labels", {}).get(LABEL_ANCESTOR) == "trainer":
                self._apply_trainer(tj, rj)
            self._apply_patches(tj, rj)
            replicated.append(rj)
        now = self.clock.stamp()
        labels = {"trainer.kubeflow.org/trainjob-name": name}
        jobset = {
            "apiVersion": JOBSET_GROUP,
            "kind": "JobSet",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "uid": self.new_uid(),
                "creationTimestamp": now,
                "labels": labels,
                "ownerReferences": [_owner(tj)],
            },
            "spec": {"replicatedJobs": replicated, "network": {"enableDNSHostnames": True, "subdomain": name}},
            "status": {"replicatedJobsStatus": []},
        }
        self.record("jobsets", jobset, "ADDED")
        service = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "uid": self.new_uid(),
                "creationTimestamp": now,
                "labels": {LABEL_JOBSET: name},
                "ownerReferences": [_owner(jobset)],
            },
            "spec": {"clusterIP": "None", "selector": {LABEL_JOBSET: name}, "publishNotReadyAddresses": True},
        }
        self.record("services", service, "ADDED")
        for rj in replicated:
            for index in range(int(rj.get("replicas", 1))):
                self._create_child_job(jobset, rj, index)

    def _apply_trainer(self, tj: dict[str, Any], rj: dict[str, Any]) -> None:
        """The TrainJob's `trainer` over the runtime's trainer Job, with the torch plugin's PET_* variables."""
        trainer = tj["spec"].get("trainer") or {}
        name = tj["metadata"]["name"]
        job_spec = rj["template"].setdefault("spec", {})
        nodes = int(trainer.get("numNodes") or 1)
        job_spec.update(parallelism=nodes, completions=nodes, completionMode="Indexed")
        pod = job_spec["template"].setdefault("spec", {})
        node = next(c for c in pod["containers"] if c["name"] == "node")
        for key in ("image", "command", "args"):
            if trainer.get(key):
                node[key] = copy.deepcopy(trainer[key])
        resources = trainer.get("resourcesPerNode") or node.get("resources") or {}
        if trainer.get("resourcesPerNode"):
            node["resources"] = copy.deepcopy(resources)
        procs = trainer.get("numProcPerNode")
        if procs is None:
            gpus = (resources.get("limits") or {}).get("nvidia.com/gpu")
            procs = "auto" if gpus else _cpus(resources)
        pet = [
            {"name": "PET_NNODES", "value": str(nodes)},
            {"name": "PET_NPROC_PER_NODE", "value": str(procs)},
            {
                "name": "PET_NODE_RANK",
                "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{COMPLETION_INDEX}']"}},
            },
            {"name": "PET_MASTER_ADDR", "value": f"{name}-node-0-0.{name}"},
            {"name": "PET_MASTER_PORT", "value": str(PORT)},
        ]
        node["env"] = _upsert_env(_upsert_env(node.get("env") or [], trainer.get("env") or []), pet)
        ports = [p for p in node.get("ports") or [] if p.get("containerPort") != PORT]
        node["ports"] = [*ports, {"containerPort": PORT, "protocol": "TCP"}]

    def _apply_patches(self, tj: dict[str, Any], rj: dict[str, Any]) -> None:
        for patch in tj["spec"].get("runtimePatches") or []:
            spec = (((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec")) or {}
            for rjp in spec.get("replicatedJobs") or []:
                if rjp.get("name") != rj["name"]:
                    continue
                pod_patch = (((rjp.get("template") or {}).get("spec") or {}).get("template")) or {}
                template = rj["template"]["spec"]["template"]
                labels = ((pod_patch.get("metadata") or {}).get("labels")) or {}
                template.setdefault("metadata", {}).setdefault("labels", {}).update(labels)
                pod, given = template["spec"], pod_patch.get("spec") or {}
                for key in POD_PATCH_FIELDS:
                    if key in given:
                        pod[key] = copy.deepcopy(given[key])
                for group in ("containers", "initContainers"):
                    for cp in given.get(group) or []:
                        c = next((c for c in pod.get(group) or [] if c["name"] == cp.get("name")), None)
                        if c is None:
                            continue  # upstream's webhook refuses these; the double ignores them
                        if cp.get("volumeMounts"):
                            c["volumeMounts"] = (c.get("volumeMounts") or []) + copy.deepcopy(cp["volumeMounts"])
                        if cp.get("env"):
                            c["env"] = _upsert_env(c.get("env") or [], cp["env"])
                        if cp.get("securityContext"):
                            c["securityContext"] = copy.deepcopy(cp["securityContext"])

    def _create_child_job(self, jobset: dict[str, Any], rj: dict[str, Any], index: int) -> None:
        js = jobset["metadata"]["name"]
        labels = {LABEL_JOBSET: js, LABEL_REPLICATED_JOB: rj["name"], LABEL_JOB_INDEX: str(index)}
        job_spec = copy.deepcopy(rj["template"]["spec"])
        template = job_spec["template"]
        template.setdefault("metadata", {}).setdefault("labels", {}).update(labels)
        template["spec"]["subdomain"] = js
        template["spec"].setdefault("restartPolicy", "OnFailure")
        job_spec.setdefault("backoffLimit", 6)
        name = f"{js}-{rj['name']}-{index}"
        job = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "uid": self.new_uid(),
                "creationTimestamp": self.clock.stamp(),
                "labels": dict(labels, **((rj["template"].get("metadata") or {}).get("labels") or {})),
                "ownerReferences": [_owner(jobset)],
            },
            "spec": job_spec,
            "status": {"startTime": self.clock.stamp(), "active": 0, "ready": 0, "terminating": 0},
        }
        self.record("jobs", job, "ADDED")
        self.event(jobset, "SuccessfulCreate", f"Created job: {name}", component="jobset")

    def indexed_pods(self, job_name: str) -> list[str]:
        """The job controller's pods of an Indexed Job, one per completion index, bound to the node."""
        names = []
        with self.changed:
            job = self.jobs[job_name]
            for index in range(int(job["spec"].get("completions") or 1)):
                template = copy.deepcopy(job["spec"]["template"])
                name = f"{job_name}-{index}-{secrets.token_hex(3)[:5]}"
                meta = template.get("metadata") or {}
                pod = {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": name,
                        "namespace": self.namespace,
                        "uid": self.new_uid(),
                        "creationTimestamp": self.clock.stamp(),
                        "labels": dict(
                            meta.get("labels") or {},
                            **{
                                "job-name": job_name,
                                "batch.kubernetes.io/job-name": job_name,
                                COMPLETION_INDEX: str(index),
                            },
                        ),
                        "annotations": dict(meta.get("annotations") or {}, **{COMPLETION_INDEX: str(index)}),
                        "ownerReferences": [_owner(job)],
                    },
                    "spec": dict(template["spec"], hostname=f"{job_name}-{index}"),
                    "status": {"phase": "Pending"},
                }
                self.record("pods", pod, "ADDED")
                self.event(job, "SuccessfulCreate", f"Created pod: {name}", component="job-controller")
                job["status"]["active"] = job["status"].get("active", 0) + 1
                self.bind_pod(pod)
                names.append(name)
            self.record("jobs", job)
        return names

    def _sync_jobset(self, name: str) -> None:
        """replicatedJobsStatus from the child Jobs; Completed once all are, Failed once one is."""
        jobset = self.store["jobsets"].get(name)
        if jobset is None or jobset["status"].get("terminalState"):
            return
        children = [j for j in self.jobs.values() if (j["metadata"].get("labels") or {}).get(LABEL_JOBSET) == name]
        statuses, done, failed = [], 0, 0
        for rj in jobset["spec"]["replicatedJobs"]:
            mine = [j for j in children if j["metadata"]["labels"].get(LABEL_REPLICATED_JOB) == rj["name"]]
            kinds = [{c["type"] for c in j["status"].get("conditions") or [] if c["status"] == "True"} for j in mine]
            ok, bad = sum("Complete" in k for k in kinds), sum("Failed" in k for k in kinds)
            ready = sum(1 for j in mine if j["status"].get("ready", 0) >= int(j["spec"].get("parallelism", 1)))
            statuses.append(
                {
                    "name": rj["name"],
                    "ready": ready,
                    "succeeded": ok,
                    "failed": bad,
                    "active": len(mine) - ok - bad,
                    "suspended": sum(1 for j in mine if j["spec"].get("suspend")),
                }
            )
            done, failed = done + ok, failed + bad
        before = copy.deepcopy(jobset["status"])
        jobset["status"]["replicatedJobsStatus"] = statuses
        total = sum(int(rj.get("replicas", 1)) for rj in jobset["spec"]["replicatedJobs"])
        if failed:
            self._finish_jobset(jobset, "Failed", "FailedJobs", "jobset failed due to one or more job failures")
        elif children and done == total:
            self._finish_jobset(jobset, "Completed", "AllJobsCompleted", "jobset completed successfully")
        if jobset["status"] != before:
            self.record("jobsets", jobset)

    def _finish_jobset(self, jobset: dict[str, Any], kind: str, reason: str, message: str) -> None:
        now = self.clock.stamp()
        jobset["status"]["terminalState"] = kind
        jobset["status"]["conditions"] = [
            {"type": kind, "status": "True", "reason": reason, "message": message, "lastTransitionTime": now}
        ]
        self.event(jobset, reason, message, kind="Normal" if kind == "Completed" else "Warning", component="jobset")
