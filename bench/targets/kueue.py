"""Kueue on Kubernetes kinds: a queued Job, and the queue wait read from its Workload.

Why: on a Kueue cluster (NERC's OpenShift: one LocalQueue per GPU model) a Job waits
*suspended* until Kueue admits its Workload; the pod scheduler only runs after that. The
wait that matters is then the Workload's creation to its `Admitted` condition, which
Kueue writes, not the pod's `PodScheduled`. env.yaml `queue:` names the LocalQueue; the
Job gets the `kueue.x-k8s.io/queue-name` label and `spec.suspend: true`
(https://kueue.sigs.k8s.io/docs/tasks/run/jobs/).
"""

from __future__ import annotations

from typing import Any

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
SOURCE = "kueue"
RESOLUTION_S = 1.0  # metav1.Time: whole seconds


def queue_job(manifest: dict[str, Any], queue: str | None) -> None:
    """Label the Job for the LocalQueue `queue` and create it suspended (Kueue unsuspends it)."""
    if not queue:
        return
    manifest.setdefault("metadata", {}).setdefault("labels", {})[QUEUE_LABEL] = queue
    manifest.setdefault("spec", {})["suspend"] = True


def kueue_marks(target: Any, job_name: str, owner_kind: str = "Job") -> dict[str, dict[str, Any]]:
    """`accepted` (Workload created) and `granted` (its Admitted condition) of the Job's (or
    TrainJob's: `owner_kind`) Workload.

    {} where there is none (no Kueue on the cluster, the Workload is gone): the pod's
    marks then stand."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    from bench.targets.kube_status import ts

    api = client.CustomObjectsApi(target.api_client())
    try:
        listed = api.list_namespaced_custom_object("kueue.x-k8s.io", "v1beta1", target.namespace, "workloads")
    except (ApiException, HTTPError, OSError):
        return {}
    for wl in listed.get("items") or []:
        owners = wl.get("metadata", {}).get("ownerReferences") or []
        if not any(o.get("kind") == owner_kind and o.get("name") == job_name for o in owners):
            continue
        out = {}
        created = ts(wl["metadata"].get("creationTimestamp"))
        admitted = next(
            (
                ts(c.get("lastTransitionTime"))
                for c in (wl.get("status") or {}).get("conditions") or []
                if c.get("type") == "Admitted" and c.get("status") == "True"
            ),
            None,
        )
        for name, value in (("accepted", created), ("granted", admitted)):
            if value is not None:
                out[name] = {"time": value, "source": SOURCE, "resolution_s": RESOLUTION_S}
        return out
    return {}
