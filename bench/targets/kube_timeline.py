"""A Kubernetes/OpenShift run's timeline marks, from the API server's own timestamps.

Why: what differs most between a cloud and an HPC cluster happens around training
(issue 21): the image build, the wait for a node, the image pull, the container start.
The API server records each of these on the objects it keeps, so they are read from
there, not guessed from bench's clock:

- `accepted`: the Job's (or PyTorchJob's) `metadata.creationTimestamp`;
- `granted`: the pod's `PodScheduled` condition `lastTransitionTime` (the scheduler bound it);
- `staged`: the last init container's `state.terminated.finishedAt` (the `run-folder`
  container that makes the run's results folder);
- `pull_start` / `pulled`: the kubelet's `Pulling` / `Pulled` Events for the main container
  (a `Pulled` "already present on machine" with no `Pulling` is a zero-length pull at its time);
- `container_started`: the main container's `state.running.startedAt` (or
  `state.terminated.startedAt` once it has ended), `container_finished` its `finishedAt`;
- OpenShift: `build_created`, `build_started`, `image_pushed`, `build_completed`: the run's
  Build (`metadata.creationTimestamp`, `status.startTimestamp`, the end of its `PushImage`
  stage in `status.stages`, `status.completionTimestamp`), named by the Job's `atlas/build`
  annotation, so delivery starts before the Job exists.

The `run-folder` init container runs the training image, so on a node that does not have it
yet the real pull happens for it, before `staged`: its own `Pulling` / `Pulled` Events are
kept as `stage_pull_start` / `stage_pulled`, and the main container then finds the image
"already present" (a zero-length `pull`). Field names: the Kubernetes API reference
(https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#PodStatus,
https://kubernetes.io/docs/reference/kubernetes-api/cluster-resources/event-v1/) and
openshift/api build/v1 BuildStatus (https://github.com/openshift/api/blob/master/build/v1/types.go).

One list per resource kind (the Job or PyTorchJob, its pods, the first pod's Events) and at
most one read of the Build: a few requests per run. A mark that cannot be read (no pod
yet, the Events expired after the API server's one-hour TTL, a pruned Build) is absent,
never 0. The timestamps are metav1.Time, whole seconds: resolution 1 s.
"""

from __future__ import annotations

from typing import Any

from bench.targets.kube_status import ts
from bench.targets.pytorchjob import CONTAINER, LABEL_REPLICA_TYPE

SOURCE = "api-server"
RESOLUTION_S = 1.0  # metav1.Time marshals whole seconds (RFC 3339)
MAIN_CONTAINERS = ("train", CONTAINER)  # the Job's training container, the PyTorchJob's


def mark(value: Any) -> dict[str, Any] | None:
    """One mark from a Kubernetes timestamp; None when the API did not give one."""
    seconds = ts(value)
    return None if seconds is None else {"time": seconds, "source": SOURCE, "resolution_s": RESOLUTION_S}


def kube_marks(target: Any, run_id: str) -> dict[str, dict[str, Any]]:
    """The marks of run `run_id` on a KubernetesTarget (or OpenShiftTarget), by name.

    A PyTorchJob (shape.nodes > 1) is followed through its Master pod; a batch Job through
    its first pod (the one that waited for the node and pulled the image; a retry's pod
    starts on a warm node and would hide both). An unreachable API raises the target's
    one-line AtlasError naming the environment and the fix.
    """
    if target.shape.nodes > 1:
        owner, pods = _pytorchjob(target, run_id)
    else:
        owner, pods = _job(target, run_id)
    if owner is None:
        return {}
    marks = {"accepted": mark(owner["creationTimestamp"])}
    build = (owner.get("annotations") or {}).get("atlas/build")
    if build:
        marks.update(_build_marks(target, build))
    if pods:
        pod = pods[0]
        marks.update(pod_marks(pod))
        marks.update(event_marks(_pod_events(target, pod), main_container(pod)))
        start, end = marks.get("pull_start"), marks.get("pulled")
        main_pulled = start is not None and end is not None and end["time"] > start["time"]
        if not main_pulled and marks.get("stage_pull_start") is not None and marks.get("stage_pulled") is not None:
            # the staging init container runs the training image, so it pulled it and the main
            # container found it present: the init container's pull is the run's image pull
            marks["pull_start"], marks["pulled"] = marks["stage_pull_start"], marks["stage_pulled"]
    if target.env.get("queue") and owner.get("name"):  # Kueue: the queue is Workload created -> Admitted
        from bench.targets.kueue import kueue_marks

        marks.update(kueue_marks(target, owner["name"]))
    return {name: m for name, m in marks.items() if m is not None}


def _job(target: Any, run_id: str) -> tuple[dict[str, Any] | None, list[Any]]:
    job = target._find_job(run_id)
    if job is None:
        return None, []
    meta = {
        "name": job.metadata.name,
        "creationTimestamp": job.metadata.creation_timestamp,
        "annotations": job.metadata.annotations,
    }
    return meta, target._pods(job)


def _pytorchjob(target: Any, run_id: str) -> tuple[dict[str, Any] | None, list[Any]]:
    """The PyTorchJob and its Master pods, found as the target's status finds them."""
    obj = target._find_pytorchjob(run_id)
    if obj is None:
        return None, []
    # The Training Operator labels replica types in lower case (training-operator pkg/controller.v1).
    masters = [p for p in target._pytorchjob_pods(obj) if (p.metadata.labels or {}).get(LABEL_REPLICA_TYPE) == "master"]
    return obj["metadata"], masters


def _build_marks(target: Any, name: str) -> dict[str, dict[str, Any] | None]:
    """The Build's three times; none when it was pruned (404) or the cluster has no Builds."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    api = client.CustomObjectsApi(target.api_client())
    try:
        build = api.get_namespaced_custom_object("build.openshift.io", "v1", target.namespace, "builds", name)
    except ApiException as exc:
        if exc.status == 404:
            return {}
        raise target.api_error(exc, f"reading build {name}") from None
    except (HTTPError, OSError) as exc:
        raise target.api_error(exc, f"reading build {name}") from None
    status = build.get("status") or {}
    push = next((s for s in status.get("stages") or [] if s.get("name") == "PushImage"), None)
    pushed = mark(push.get("startTime")) if push else None
    if pushed is not None:  # the stage's start (whole seconds) plus its duration (ms)
        pushed["time"] += (push.get("durationMilliseconds") or 0) / 1000
    return {
        "build_created": mark(build["metadata"].get("creationTimestamp")),
        "build_started": mark(status.get("startTimestamp")),
        "image_pushed": pushed,
        "build_completed": mark(status.get("completionTimestamp")),
    }


def main_container(pod: Any) -> str:
    """The training container's name: `train` (Job) or `pytorch` (PyTorchJob), else the first."""
    names = [c.name for c in pod.spec.containers]
    return next((n for n in names if n in MAIN_CONTAINERS), names[0])


def pod_marks(pod: Any) -> dict[str, dict[str, Any] | None]:
    """granted, staged, container_started, container_finished from the pod's status."""
    status = pod.status
    if status is None:
        return {}
    scheduled = next(
        (c for c in status.conditions or [] if c.type == "PodScheduled" and c.status == "True"),
        None,
    )
    inits = status.init_container_statuses or []
    last_init = inits[-1].state.terminated if inits and inits[-1].state else None
    name = main_container(pod)
    main = next((cs for cs in status.container_statuses or [] if cs.name == name), None)
    state = main.state if main is not None else None
    running = state.running if state else None
    ended = state.terminated if state else None
    return {
        "granted": mark(scheduled.last_transition_time if scheduled else None),
        "staged": mark(last_init.finished_at if last_init else None),
        "container_started": mark((running or ended).started_at if running or ended else None),
        "container_finished": mark(ended.finished_at if ended else None),
    }


def _pod_events(target: Any, pod: Any) -> list[Any]:
    selector = f"involvedObject.kind=Pod,involvedObject.name={pod.metadata.name}"
    return target._call(
        "listing the pod's Events",
        target._core().list_namespaced_event,
        namespace=target.namespace,
        field_selector=selector,
    ).items


def event_time(event: Any) -> Any:
    """When an Event first happened: firstTimestamp (core/v1 recorder), else eventTime
    (events.k8s.io recorder, which leaves firstTimestamp empty), else its creation."""
    return event.first_timestamp or event.event_time or event.metadata.creation_timestamp


def event_marks(events: list[Any], container: str) -> dict[str, dict[str, Any] | None]:
    """pull_start / pulled for `container`, stage_pull_start / stage_pulled for the init containers."""
    marks: dict[str, dict[str, Any] | None] = {}
    groups = {"": f"spec.containers{{{container}}}", "stage_": "spec.initContainers{"}
    for prefix, field_path in groups.items():
        mine = sorted(
            (e for e in events if (e.involved_object.field_path or "").startswith(field_path)),
            key=lambda e: ts(event_time(e)) or 0.0,
        )
        pulling = next((e for e in mine if e.reason == "Pulling"), None)
        pulled = next((e for e in mine if e.reason == "Pulled"), None)
        if pulled is not None and (pulling is None or "already present" in (pulled.message or "")):
            pulling = pulled  # image already on the node: a zero-length pull
        marks[f"{prefix}pull_start"] = mark(event_time(pulling)) if pulling is not None else None
        marks[f"{prefix}pulled"] = mark(event_time(pulled)) if pulled is not None else None
    return marks
