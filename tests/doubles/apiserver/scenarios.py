"""Shortcuts tests use to put the cluster in a state at once (a pod already failed, a job done).

Each writes what the kubelet or controller would have written by then, with the clock's
time, so what clients read looks as it does on a cluster.
"""

from __future__ import annotations

import copy
import secrets
from typing import Any

KF_JOB_NAME, KF_REPLICA_TYPE, KF_REPLICA_INDEX = (
    "training.kubeflow.org/job-name",
    "training.kubeflow.org/replica-type",
    "training.kubeflow.org/replica-index",
)


class Scenarios:
    def add_buildconfig(self, name: str) -> None:
        bc = {
            "apiVersion": "build.openshift.io/v1",
            "kind": "BuildConfig",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "uid": self.new_uid(),
                "creationTimestamp": self.clock.stamp(),
            },
            "spec": {
                "strategy": {"type": "Docker", "dockerStrategy": {}},
                "output": {"to": {"kind": "ImageStreamTag", "name": f"{name}:latest"}},
            },
        }
        self.validate(bc)
        self.record("buildconfigs", bc, "ADDED")

    def job_pods(self, job_name: str) -> list[dict[str, Any]]:
        return [p for p in self.pods.values() if p["metadata"]["labels"].get("job-name") == job_name]

    def add_job_pod(self, job_name: str, phase: str, **state: Any) -> dict[str, Any]:
        """A pod of the Job in the given state, as the kubelet would report it."""
        job = self.jobs[job_name]
        name = f"{job_name}-{secrets.token_hex(3)[:5]}"[-63:]
        labels = dict(job["spec"]["template"]["metadata"].get("labels", {}), **{"job-name": job_name})
        owner = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": job_name,
            "uid": job["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        return self.add_pod(name, labels, job["spec"]["template"]["spec"], phase, owner=owner, **state)

    def add_pytorchjob_pod(self, job_name: str, role: str, index: int, phase: str, **state: Any) -> dict[str, Any]:
        """The pod the Training Operator makes for replica `role` (Master/Worker) `index`."""
        spec = self.pytorchjobs[job_name]["spec"]["pytorchReplicaSpecs"][role]["template"]
        labels = dict(
            (spec.get("metadata") or {}).get("labels", {}),
            **{KF_JOB_NAME: job_name, KF_REPLICA_TYPE: role.lower(), KF_REPLICA_INDEX: str(index)},
        )
        return self.add_pod(f"{job_name}-{role.lower()}-{index}", labels, spec["spec"], phase, **state)

    def add_pod(
        self,
        name: str,
        labels: dict[str, str],
        spec: dict[str, Any],
        phase: str,
        started: float | None = None,
        waiting: str | None = None,
        terminated: str | None = None,
        exit_code: int = 0,
        evicted: bool = False,
        unschedulable: str | None = None,
        owner: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        image = spec["containers"][0]["image"]
        now = self.clock.now()
        state: dict[str, Any] = {}
        if waiting:
            state = {"waiting": {"reason": waiting, "message": f'Back-off pulling image "{image}"'}}
        elif terminated:
            state = {
                "terminated": {
                    "reason": terminated,
                    "exitCode": exit_code,
                    "startedAt": self.clock.stamp(started or now),
                    "finishedAt": self.clock.stamp(),
                }
            }
        elif phase == "Running":
            state = {"running": {"startedAt": self.clock.stamp(started or now)}}
        stamp = self.clock.stamp()
        conditions: list[dict[str, Any]] = []
        if not unschedulable:
            conditions.append(
                {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": stamp}
            )
        status: dict[str, Any] = {"phase": phase, "conditions": conditions}
        if state:
            status["containerStatuses"] = [
                {
                    "name": spec["containers"][0]["name"],
                    "image": image,
                    "imageID": "",
                    "ready": phase == "Running",
                    "restartCount": 0,
                    "started": phase == "Running",
                    "state": state,
                }
            ]
            ready = "True" if phase == "Running" else "False"
            for kind in ("Initialized", "ContainersReady", "Ready"):
                conditions.append(
                    {
                        "type": kind,
                        "status": "True" if kind == "Initialized" else ready,
                        "lastProbeTime": None,
                        "lastTransitionTime": stamp,
                    }
                )
        if evicted:
            status.update(reason="Evicted", message="The node was low on resource: memory.")
            conditions.append(
                {
                    "type": "DisruptionTarget",
                    "status": "True",
                    "reason": "TerminationByKubelet",
                    "lastProbeTime": None,
                    "lastTransitionTime": stamp,
                }
            )
        if unschedulable:
            conditions.append(
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": unschedulable,
                    "lastProbeTime": None,
                    "lastTransitionTime": stamp,
                }
            )
        meta: dict[str, Any] = {
            "name": name,
            "namespace": self.namespace,
            "labels": labels,
            "uid": self.new_uid(),
            "creationTimestamp": stamp,
        }
        if owner:
            meta["ownerReferences"] = [owner]
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": copy.deepcopy(spec), "status": status}
        return self.record("pods", pod, "ADDED")

    def finish_job(self, job_name: str, condition: str, reason: str = "", failed: int = 0, message: str = "") -> None:
        """The job controller's terminal conditions (v1.31+: SuccessCriteriaMet/FailureTarget first)."""
        now = self.clock.stamp()
        job = self.jobs[job_name]
        status = job.setdefault("status", {})
        status.setdefault("startTime", job["metadata"].get("creationTimestamp", now))
        first = {"Complete": "SuccessCriteriaMet", "Failed": "FailureTarget"}.get(condition)
        conds = [
            {
                "type": kind,
                "status": "True",
                "reason": reason or condition,
                "message": message,
                "lastProbeTime": now,
                "lastTransitionTime": now,
            }
            for kind in ([first] if first else []) + [condition]
        ]
        if condition == "Complete":
            conds[0]["reason"] = conds[1]["reason"] = "CompletionsReached"
            conds[0]["message"] = conds[1]["message"] = message or "Reached expected number of succeeded pods"
            if reason:
                conds[-1]["reason"] = reason
            status["completionTime"] = now
            status["succeeded"] = max(1, status.get("succeeded", 0))
        status["conditions"] = conds
        status.update(active=0, ready=0)
        if failed or condition == "Failed":
            status["failed"] = failed or status.get("failed", 0)
        self.event(
            job,
            "Completed" if condition == "Complete" else reason or condition,
            "Job completed" if condition == "Complete" else message or condition,
            "Normal" if condition == "Complete" else "Warning",
            component="job-controller",
        )
        self.record("jobs", job)

    def set_pytorchjob_condition(self, job_name: str, condition: str, reason: str = "", message: str = "") -> None:
        """Append a condition as the operator does: Created, Running, Restarting, Succeeded, Failed."""
        job = self.pytorchjobs[job_name]
        status = job.setdefault("status", {})
        now = self.clock.stamp()
        for cond in status.setdefault("conditions", []):
            if cond["type"] in ("Running", "Restarting") and condition in ("Succeeded", "Failed", "Restarting"):
                cond["status"] = "False"
        status["conditions"].append(
            {
                "type": condition,
                "status": "True",
                "reason": reason or f"PyTorchJob{condition}",
                "message": message,
                "lastUpdateTime": now,
                "lastTransitionTime": now,
            }
        )
        status.setdefault("startTime", now)
        if condition in ("Succeeded", "Failed"):
            status["completionTime"] = now
        self.record("pytorchjobs", job)
