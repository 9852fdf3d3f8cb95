"""`bench stage-data` on Kubernetes and OpenShift: a Job that fetches the data file onto the data PVC.

Why a Job: the data PVC is only reachable from inside the cluster, and a Job survives the
laptop that started it. It runs `python -m bench.stage_data fetch` (bench/stage_data.py)
in the training image: from an HTTPS URL, an S3-compatible bucket (credentials from a
Secret, never from env.yaml) or another PVC mounted read-only; the fetch verifies the
sha256, keeps the old file on a mismatch and does nothing when the file is already there,
so staging twice is harmless. bench waits for the Job and prints the fetch's one line.
"""

from __future__ import annotations

import math
import time
from typing import Any

from bench.errors import AtlasError
from bench.stage_data import DataSpec

COMPONENT = "app.kubernetes.io/component"
SOURCE_MOUNT = "/source"
MAX_TIMEOUT_S = 7 * 86400.0  # a week, as `bench stage-data --timeout` allows


def stage_job(target: Any, spec: DataSpec, image: str, timeout_s: float) -> dict[str, Any]:
    """The staging Job for `spec`; validated strictly like every manifest bench sends.
    `timeout_s` (the Job's deadline) must be a finite number of seconds in (0, a week]."""
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not 0 < timeout_s <= MAX_TIMEOUT_S:
        raise AtlasError(f"stage-data timeout {timeout_s!r}: give seconds, more than 0 and at most {MAX_TIMEOUT_S:g}")
    dest = f"{spec.mount.rstrip('/')}/{spec.file}"
    source = spec.source or ""
    mounts = [{"name": "data", "mountPath": spec.mount}, {"name": "tmp", "mountPath": "/tmp"}]
    volumes: list[dict[str, Any]] = [
        {"name": "data", "persistentVolumeClaim": {"claimName": spec.pvc}},
        {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}},
    ]
    if source.startswith("pvc:"):
        claim, _, path = source[len("pvc:") :].partition("/")
        source = f"{SOURCE_MOUNT}/{path}"
        mounts.append({"name": "source", "mountPath": SOURCE_MOUNT, "readOnly": True})
        volumes.append({"name": "source", "persistentVolumeClaim": {"claimName": claim, "readOnly": True}})
    container: dict[str, Any] = {
        "name": "stage",
        "image": image,
        "command": ["python", "-m", "bench.stage_data", "fetch", "--source", source, "--dest", dest,
                    "--sha256", spec.sha256, "--root", spec.mount]
                   + (["--size", str(spec.size)] if spec.size else []),
        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
        "volumeMounts": mounts,
        # The fetch's one-line error becomes the container's termination message.
        "terminationMessagePolicy": "FallbackToLogsOnError",
        # Read-only root filesystem, as the training Job's: the fetch writes only beside its
        # destination on the data volume (and Python's temporary files under /tmp).
        "securityContext": {
            "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]},
        },
    }  # fmt: skip
    if spec.s3_endpoint:
        container["env"] = [{"name": "ATLAS_S3_ENDPOINT", "value": spec.s3_endpoint}]
    if spec.allow_http:  # `bench stage-data --allow-http`: the in-cluster fetch may use plain http
        container.setdefault("env", []).append({"name": "ATLAS_ALLOW_HTTP", "value": "1"})
    if spec.credentials_secret:
        container["envFrom"] = [{"secretRef": {"name": spec.credentials_secret}}]
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "generateName": "atlas-stage-data-",
            "namespace": target.namespace,
            "labels": {COMPONENT: "data-staging", "atlas/data-sha256": spec.sha256[:16]},
        },
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": max(1, math.ceil(timeout_s)),
            "ttlSecondsAfterFinished": 86400,
            "template": {
                "metadata": {"labels": {COMPONENT: "data-staging"}},
                "spec": {
                    "restartPolicy": "Never",
                    "automountServiceAccountToken": False,
                    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [container],
                    "volumes": volumes,
                },
            },
        },
    }
    target._validate(job)
    return job


def stage_on_kubernetes(target: Any, spec: DataSpec, timeout_s: float = 3600) -> str:
    """Create the staging Job, wait for it, and return the fetch's line (or raise its error)."""
    if not spec.source:
        raise AtlasError(
            f"{target.env.name}: data.source is not set: an https:// URL, s3://bucket/key (with data.s3_endpoint "
            "and data.credentials_secret) or pvc:CLAIM/path, in env.yaml or as --source"
        )
    image = target.collector_image()  # the training image (any build): it has python and bench
    manifest = stage_job(target, spec, image, timeout_s)
    created = target._call(
        "creating the data staging Job",
        target._batch().create_namespaced_job,
        namespace=target.namespace,
        body=manifest,
    )
    name = created.metadata.name
    deadline = time.monotonic() + timeout_s
    while True:
        job = target._call(f"reading Job {name}", target._batch().read_namespaced_job, name, target.namespace)
        done = {c.type: c for c in (job.status.conditions or []) if c.status == "True"}
        if "Complete" in done or "Failed" in done:
            break
        if time.monotonic() > deadline:
            raise AtlasError(
                f"{target.env.name}: data staging Job {name} still running after {timeout_s:.0f} s; "
                f"follow it with `oc -n {target.namespace} logs job/{name}`"
            )
        time.sleep(target.poll_s)
    words = _last_words(target, name)
    if "Complete" in done:
        return words or f"staged by Job {name}"
    reason = words or f"{done['Failed'].reason}: {done['Failed'].message or ''}"
    raise AtlasError(f"{target.env.name}: data staging Job {name} failed: {reason.strip()}")


def _last_words(target: Any, job_name: str) -> str:
    """The last line the fetch printed (its log, else its termination message)."""
    pods = target._call(
        "listing pods", target._core().list_namespaced_pod, namespace=target.namespace,
        label_selector=f"job-name={job_name}",
    ).items  # fmt: skip
    for pod in pods:
        try:
            log = target._core().read_namespaced_pod_log(pod.metadata.name, target.namespace, tail_lines=5)
        except Exception:  # the log may be gone with the node; the termination message stays
            log = ""
        lines = [line for line in (log or "").splitlines() if line.strip()]
        if lines:
            return lines[-1].removeprefix("stage-data: ")
        for cs in (pod.status.container_statuses or []) if pod.status else []:
            term = cs.state.terminated if cs.state else None
            if term is not None and term.message:
                return term.message.strip().splitlines()[-1].removeprefix("stage-data: ")
    return ""
