"""Kueue for the API double: ClusterQueue quota, LocalQueues, Workloads, BestEffortFIFO admission.

What a NERC-style cluster does with a batch Job (or a Kubeflow Trainer TrainJob: its
`numNodes` pods of `resourcesPerNode`, a Workload `trainjob-<name>-<hash>` owned by it)
labelled `kueue.x-k8s.io/queue-name` and created suspended
(https://kueue.sigs.k8s.io/docs/tasks/run/jobs/): Kueue's job controller makes a Workload
for it (`job-<name>-<hash>`, owned by the Job, `spec.queueName`,
one podSet with the pod template's requests); the ClusterQueue behind that LocalQueue
admits Workloads oldest first, skipping one that does not fit for a later one that does
(BestEffortFIFO), when the sum of admitted requests stays within its nominal quota of cpu,
memory and nvidia.com/gpu; admission writes `status.admission` and the `QuotaReserved`
and `Admitted` conditions, then unsuspends the Job. A finished Job's Workload gets
`Finished` and gives its quota back. Field names: kueue.x-k8s.io/v1beta1 Workload
(https://kueue.sigs.k8s.io/docs/reference/kueue.v1beta1/#kueue-x-k8s-io-v1beta1-Workload).

Queues are configured in the double (`Kueue(double, {"cq": quota}, {"v100-localqueue": "cq"})`
or `python -m tests.doubles.apiserver --kueue ...`); Workloads are served read-only.
"""

from __future__ import annotations

import hashlib
import threading
import time
from typing import Any

from tests.doubles.apiserver.resources import Resource

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
GROUP_VERSION = "kueue.x-k8s.io/v1beta1"
WORKLOADS = Resource(GROUP_VERSION, "workloads", "Workload", subresources=("status",))
RESOURCE_NAMES = ("cpu", "memory", "nvidia.com/gpu")
UNITS = {"m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def quantity(text: Any) -> float:
    """A resource.Quantity ("100m", "2Gi", "4") as a number."""
    s = str(text)
    for suffix in sorted(UNITS, key=len, reverse=True):
        if s.endswith(suffix):
            return float(s[: -len(suffix)]) * UNITS[suffix]
    return float(s)


def pod_requests(template: dict[str, Any]) -> dict[str, float]:
    """The pod's requests as Kueue counts them: the main containers' sum (init containers' max)."""
    spec = template.get("spec") or {}
    total = dict.fromkeys(RESOURCE_NAMES, 0.0)
    for c in spec.get("containers") or []:
        requests = (c.get("resources") or {}).get("requests") or (c.get("resources") or {}).get("limits") or {}
        for name in RESOURCE_NAMES:
            total[name] += quantity(requests.get(name, 0))
    for c in spec.get("initContainers") or []:
        requests = (c.get("resources") or {}).get("requests") or {}
        for name in RESOURCE_NAMES:
            total[name] = max(total[name], quantity(requests.get(name, 0)))
    return total


class Kueue:
    """Kueue's controllers over one double; a thread polls every 0.1 s (the double's clock is the wall's)."""

    def __init__(self, double: Any, cluster_queues: dict[str, dict[str, Any]], local_queues: dict[str, str]) -> None:
        self.double = double
        self.quota = {cq: {n: quantity(q.get(n, 0)) for n in RESOURCE_NAMES} for cq, q in cluster_queues.items()}
        self.local_queues = dict(local_queues)
        if WORKLOADS not in double.resources:
            double.resources.append(WORKLOADS)
        double.store.setdefault("workloads", {})
        self.stopping = False
        threading.Thread(target=self._loop, daemon=True).start()

    def stop(self) -> None:
        self.stopping = True

    def _loop(self) -> None:
        while not self.stopping and not self.double.stopping:
            with self.double.changed:
                self.sync()
            time.sleep(0.1)

    def sync(self) -> None:
        """One pass of Kueue's job and workload controllers (batch Jobs and TrainJobs)."""
        d = self.double
        owned = {_owner_key(w): w for w in d.store["workloads"].values()}
        for plural in OWNER_KINDS:
            for name, job in list(d.store.get(plural, {}).items()):
                queue = (job["metadata"].get("labels") or {}).get(QUEUE_LABEL)
                if queue and (plural, name) not in owned and job["spec"].get("suspend"):
                    owned[(plural, name)] = self._workload(plural, job, queue)
                wl = owned.get((plural, name))
                if wl is not None and _finished(job) and not _has(wl, "Finished"):
                    self._condition(wl, "Finished", "JobFinished", f"{OWNER_KINDS[plural][1]} finished")
                    d.record("workloads", wl)
        for (plural, name), wl in owned.items():  # the owner is gone: the Workload goes with it
            if name not in d.store.get(plural, {}) and not _has(wl, "Finished"):
                self._condition(wl, "Finished", "OwnerDeleted", f"{OWNER_KINDS[plural][1]} deleted")
                d.record("workloads", wl)
        pending = sorted(
            (w for w in d.store["workloads"].values() if not _has(w, "Admitted") and not _has(w, "Finished")),
            key=lambda w: (w["metadata"]["creationTimestamp"], int(w["metadata"]["resourceVersion"])),
        )
        for wl in pending:  # BestEffortFIFO: the oldest first; one that does not fit waits, later ones may go
            self._admit_if_it_fits(wl)

    def _workload(self, plural: str, job: dict[str, Any], queue: str) -> dict[str, Any]:
        d = self.double
        api_version, kind = OWNER_KINDS[plural]
        prefix = kind.lower()  # Kueue's workload name: <owner kind>-<name>-<hash>
        name = f"{prefix}-{job['metadata']['name']}-{hashlib.sha256(job['metadata']['uid'].encode()).hexdigest()[:5]}"
        count, template = _pod_set(plural, job)
        wl = {
            "apiVersion": GROUP_VERSION,
            "kind": "Workload",
            "metadata": {
                "name": name[:63],
                "namespace": d.namespace,
                "uid": d.new_uid(),
                "creationTimestamp": d.clock.stamp(),
                "labels": {"kueue.x-k8s.io/job-uid": job["metadata"]["uid"]},
                "ownerReferences": [
                    {
                        "apiVersion": api_version,
                        "kind": kind,
                        "name": job["metadata"]["name"],
                        "uid": job["metadata"]["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {
                "queueName": queue,
                "active": True,
                "podSets": [{"name": "main" if plural == "jobs" else "node", "count": count, "template": template}],
            },
            "status": {"conditions": []},
        }
        if queue not in self.local_queues:
            self._condition(wl, "QuotaReserved", "Inadmissible", f"LocalQueue {queue} doesn't exist", status="False")
        return d.record("workloads", wl, "ADDED")

    def _usage(self, cluster_queue: str) -> dict[str, float]:
        used = dict.fromkeys(RESOURCE_NAMES, 0.0)
        for wl in self.double.store["workloads"].values():
            adm = (wl.get("status") or {}).get("admission") or {}
            if adm.get("clusterQueue") == cluster_queue and _has(wl, "Admitted") and not _has(wl, "Finished"):
                for name, value in _requests(wl).items():
                    used[name] += value
        return used

    def _admit_if_it_fits(self, wl: dict[str, Any]) -> None:
        cq = self.local_queues.get(wl["spec"]["queueName"])
        if cq is None:
            return
        used, need, quota = self._usage(cq), _requests(wl), self.quota[cq]
        if any(used[n] + need[n] > quota[n] + 1e-9 for n in RESOURCE_NAMES if need[n]):
            short = ", ".join(n for n in RESOURCE_NAMES if need[n] and used[n] + need[n] > quota[n] + 1e-9)
            if not _has(wl, "QuotaReserved", "False"):
                pod_set = wl["spec"]["podSets"][0]["name"]
                message = f"couldn't assign flavors to pod set {pod_set}: insufficient unused quota for {short}"
                self._condition(wl, "QuotaReserved", "Pending", message, status="False")
                self.double.record("workloads", wl)
            return
        wl["status"]["admission"] = {
            "clusterQueue": cq,
            "podSetAssignments": [
                {
                    "name": wl["spec"]["podSets"][0]["name"],
                    "count": wl["spec"]["podSets"][0]["count"],
                    "flavors": dict.fromkeys((n for n in RESOURCE_NAMES if need[n]), "default-flavor"),
                    "resourceUsage": {n: _format(n, need[n]) for n in RESOURCE_NAMES if need[n]},
                }
            ],
        }
        self._condition(wl, "QuotaReserved", "QuotaReserved", f"Quota reserved in ClusterQueue {cq}")
        self._condition(wl, "Admitted", "Admitted", "The workload is admitted")
        self.double.record("workloads", wl)
        plural, name = _owner_key(wl)
        job = self.double.store[plural][name]
        job["spec"]["suspend"] = False  # Kueue's job reconciler starts it
        self.double.record(plural, job)

    def _condition(self, wl: dict[str, Any], kind: str, reason: str, message: str, status: str = "True") -> None:
        conds = [c for c in wl["status"]["conditions"] if c["type"] != kind]
        conds.append(
            {
                "type": kind,
                "status": status,
                "reason": reason,
                "message": message,
                "lastTransitionTime": self.double.clock.stamp(),
                "observedGeneration": 1,
            }
        )
        wl["status"]["conditions"] = conds


# What Kueue's integrations here admit: batch Jobs and Kubeflow Trainer TrainJobs (plural -> owner).
OWNER_KINDS = {"jobs": ("batch/v1", "Job"), "trainjobs": ("trainer.kubeflow.org/v1alpha1", "TrainJob")}


def _owner_key(wl: dict[str, Any]) -> tuple[str, str]:
    owner = wl["metadata"]["ownerReferences"][0]
    plural = next((p for p, (_, kind) in OWNER_KINDS.items() if kind == owner["kind"]), "jobs")
    return plural, owner["name"]


def _finished(job: dict[str, Any]) -> bool:
    """A Job with a condition (Complete/Failed), a TrainJob with Complete or Failed True."""
    conds = (job.get("status") or {}).get("conditions") or []
    if job.get("kind") == "TrainJob":
        return any(c["type"] in ("Complete", "Failed") and c["status"] == "True" for c in conds)
    return bool(conds)


def _pod_set(plural: str, job: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """(count, pod template) of the owner's one pod set: a TrainJob's numNodes pods of resourcesPerNode."""
    if plural == "jobs":
        return int(job["spec"].get("parallelism", 1)), job["spec"]["template"]
    trainer = job["spec"].get("trainer") or {}
    container = {"name": "node", "image": trainer.get("image", ""), "resources": trainer.get("resourcesPerNode") or {}}
    return int(trainer.get("numNodes") or 1), {"spec": {"containers": [container]}}


def _has(wl: dict[str, Any], kind: str, status: str = "True") -> bool:
    return any(c["type"] == kind and c["status"] == status for c in (wl.get("status") or {}).get("conditions") or [])


def _requests(wl: dict[str, Any]) -> dict[str, float]:
    pod_set = wl["spec"]["podSets"][0]
    return {n: v * pod_set["count"] for n, v in pod_requests(pod_set["template"]).items()}


def _format(name: str, value: float) -> str:
    if name == "memory":
        return f"{int(value / 2**20)}Mi"
    if name == "cpu" and value != int(value):
        return f"{int(value * 1000)}m"
    return str(int(value))
