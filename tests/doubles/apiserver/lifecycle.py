"""What controllers and the kubelet write, driven by the double's clock.

Build: New -> Pending -> Running -> Complete/Failed with status.startTimestamp,
completionTimestamp and duration (nanoseconds), as openshift/api build/v1 BuildStatus.
Job: the job controller's status.startTime, active/ready/succeeded/failed, conditions
(SuccessCriteriaMet then Complete; FailureTarget then Failed, v1.31+,
pkg/controller/job/job_controller.go); its pods: PodScheduled, Initialized,
ContainersReady, Ready conditions with lastTransitionTime, container state.running.startedAt
/ state.terminated.finishedAt; init containers run one after another before the main one
(initContainerStatuses with state.terminated.finishedAt; Initialized turns True after the
last); Events as the scheduler and kubelet emit them (Scheduled;
Pulling, Pulled "Successfully pulled image ... in Xs (Ys including waiting). Image size: N
bytes." or "Container image ... already present on machine" from pkg/kubelet/images/image_manager.go,
https://github.com/kubernetes/kubernetes/blob/master/pkg/kubelet/images/image_manager.go;
Created, Started; Failed, BackOff), each container's with involvedObject.fieldPath
spec.containers{name} / spec.initContainers{name}.
Namespaces: Terminating until the next clock tick, then gone
(pkg/controller/namespace/deletion).
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any

from tests.doubles.apiserver.resources import Resource
from tests.doubles.apiserver.trainer import LABEL_JOBSET

NODE = "worker-gpu-0"
REGISTRY = "image-registry.openshift-image-registry.svc:5000"


def go_duration(seconds: float) -> str:
    """time.Duration.String() truncated to milliseconds: 12.345s, 1m2.5s, 1h0m0s."""
    ms = int(round(seconds * 1000))
    h, rest = divmod(ms, 3_600_000)
    m, rest = divmod(rest, 60_000)
    s = f"{rest / 1000:.3f}".rstrip("0").rstrip(".") + "s"
    if h:
        return f"{h}h{m}m{s}"
    if m:
        return f"{m}m{s}"
    return s if ms >= 1000 or ms == 0 else f"{ms}ms"


class Lifecycle:
    """Mixed into the double; uses store, record(), clock, namespace."""

    # -- hooks of the write path --------------------------------------------------------
    def initial_status(self, r: Resource, obj: dict[str, Any]) -> dict[str, Any]:
        return {
            "namespaces": {"phase": "Active"},
            "persistentvolumeclaims": {"phase": "Pending"},
            "pods": {"phase": "Pending"},
            "builds": {"phase": "New"},
        }.get(r.plural, {})

    def after_create(self, r: Resource, obj: dict[str, Any]) -> None:
        if r.plural == "jobs":
            # the job controller's first sync: startTime (pkg/controller/job/job_controller.go)
            obj["status"] = {
                "startTime": self.clock.stamp(),
                "active": 0,
                "ready": 0,
                "terminating": 0,
                "uncountedTerminatedPods": {},
            }
            self.record("jobs", obj)
        if r.plural == "pods" and self.autostart_pods:
            # the scheduler and kubelet at once: bound, image present, container running
            self.bind_pod(obj)
            self.prepare_pod(obj["metadata"]["name"])
            self.start_container(obj["metadata"]["name"])
        if r.plural == "trainjobs":
            self.sync_trainjobs()  # trainer.py: the Trainer controller makes its JobSet at once
        if r.plural == "buildconfigs":
            self.config_change(obj)  # webhooks.py: a ConfigChange trigger starts build 1
        if r.plural == "imagestreams":  # the image controller publishes the registry address
            obj["status"] = {"dockerImageRepository": f"{REGISTRY}/{self.namespace}/{obj['metadata']['name']}"}
            self.record("imagestreams", obj)
        if r.plural == "persistentvolumeclaims":
            obj["status"] = {
                "phase": "Bound",
                "accessModes": obj["spec"]["accessModes"],
                "capacity": {"storage": obj["spec"]["resources"]["requests"]["storage"]},
            }
            obj["spec"]["volumeName"] = f"pvc-{obj['metadata']['uid']}"
            self.record("persistentvolumeclaims", obj)

    def tick(self) -> None:
        """A clock tick: namespaces whose contents are gone finish terminating; the Trainer and
        JobSet controllers sync (a resumed TrainJob gets its JobSet, a finished JobSet its status)."""
        with self.changed:
            self.sync_trainjobs()
            for ns in list(self.store["namespaces"].values()):
                if (ns.get("status") or {}).get("phase") == "Terminating":
                    self.record("namespaces", ns, "DELETED")

    def terminate_namespace(self, ns: dict[str, Any]) -> dict[str, Any]:
        ns["metadata"]["deletionTimestamp"] = self.clock.stamp()
        ns["spec"] = {"finalizers": ["kubernetes"]}
        ns["status"] = {"phase": "Terminating"}
        for plural, objects in self.store.items():
            if plural != "namespaces":
                for obj in list(objects.values()):
                    self.record(plural, obj, "DELETED")
        return self.record("namespaces", ns)

    # -- events -------------------------------------------------------------------------
    def event(
        self,
        obj: dict[str, Any],
        reason: str,
        message: str,
        kind: str = "Normal",
        component: str = "kubelet",
        field_path: str = "",
    ) -> dict[str, Any]:
        meta = obj["metadata"]
        now = self.clock.stamp()
        name = f"{meta['name']}.{hashlib.sha1(f'{reason}{message}{self._serial_peek()}'.encode()).hexdigest()[:16]}"
        involved = {
            "kind": obj["kind"],
            "namespace": self.namespace,
            "name": meta["name"],
            "uid": meta.get("uid", ""),
            "apiVersion": obj["apiVersion"],
            "resourceVersion": meta.get("resourceVersion", ""),
        }
        if field_path:
            involved["fieldPath"] = field_path
        ev = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": self.namespace, "uid": self.new_uid(), "creationTimestamp": now},
            "involvedObject": involved,
            "reason": reason,
            "message": message,
            "type": kind,
            "source": {"component": component, **({"host": NODE} if component == "kubelet" else {})},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "reportingComponent": component,
            "reportingInstance": NODE if component == "kubelet" else "",
        }
        if component == "default-scheduler":  # events.k8s.io/v1 recorder: eventTime, no first/last
            ev.update(
                firstTimestamp=None,
                lastTimestamp=None,
                eventTime=self.clock.micro_stamp(),
                action="Binding",
                reportingInstance=f"default-scheduler-{NODE}",
                count=None,
            )
            ev.pop("count")
        return self.record("events", ev, "ADDED")

    # -- builds -------------------------------------------------------------------------
    def set_build_phase(
        self, name: str, phase: str, reason: str = "", message: str = "", stages: tuple[tuple[str, float], ...] = ()
    ) -> dict[str, Any]:
        """Move a Build on: Pending, Running (startTimestamp), Complete/Failed/Cancelled (end, duration).

        `stages`, at the end: (name, seconds) one after another from startTimestamp, written as
        status.stages (StageInfo: name FetchInputs/PullImages/Build/PushImage, startTime,
        durationMilliseconds; openshift/api build/v1 types.go).
        """
        with self.changed:
            build = self.builds[name]
            st = build.setdefault("status", {})
            st["phase"] = phase
            now = self.clock.now()
            if phase == "Running":
                st["startTimestamp"] = self.clock.stamp()
                self.event(
                    build, "BuildStarted", f"Build {self.namespace}/{name} is now running", component="build-controller"
                )
            if phase in ("Complete", "Failed", "Error", "Cancelled"):
                st.setdefault("startTimestamp", self.clock.stamp())
                st["completionTimestamp"] = self.clock.stamp()
                from tests.doubles.apiserver.tables import parse_time

                st["duration"] = int((now - parse_time(st["startTimestamp"])) * 1e9)
                at = parse_time(st["startTimestamp"])
                for stage, seconds in stages:
                    ms = int(round(seconds * 1000))
                    st.setdefault("stages", []).append(
                        {"name": stage, "startTime": self.clock.stamp(at), "durationMilliseconds": ms}
                    )
                    at += ms / 1000
                if reason:
                    st.update(reason=reason, message=message)
                if phase == "Complete":
                    bc = build["metadata"]["labels"]["buildconfig"]
                    digest = "sha256:" + hashlib.sha256(name.encode()).hexdigest()
                    st["outputDockerImageReference"] = f"{REGISTRY}/{self.namespace}/{bc}:latest"
                    st["output"] = {"to": {"imageDigest": digest}}
                self.event(
                    build,
                    "Build" + {"Complete": "Completed"}.get(phase, phase),
                    f"Build {self.namespace}/{name} {phase.lower()}",
                    component="build-controller",
                    kind="Normal" if phase == "Complete" else "Warning",
                )
            return self.record("builds", build)

    def complete_build(self, build: dict[str, Any]) -> None:
        """The default on_build: the build finishes at once (New -> Complete, zero duration)."""
        digest = "sha256:" + hashlib.sha256(build["metadata"]["name"].encode()).hexdigest()
        bc = build["metadata"]["labels"]["buildconfig"]
        now = self.clock.stamp()
        build["status"] = {
            "phase": "Complete",
            "startTimestamp": now,
            "completionTimestamp": now,
            "duration": 0,
            "outputDockerImageReference": f"{REGISTRY}/{self.namespace}/{bc}:latest",
            "output": {"to": {"imageDigest": digest}},
        }

    # -- job pods, step by step ---------------------------------------------------------
    def schedule_pod(self, job_name: str) -> dict[str, Any]:
        """The job controller creates a pod; the scheduler binds it (PodScheduled)."""
        with self.changed:
            pod = self.add_job_pod(job_name, "Pending")
            job = self.jobs[job_name]
            self.event(job, "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}", component="job-controller")
            job["status"]["active"] = job["status"].get("active", 0) + 1
            self.record("jobs", job)
            return self.bind_pod(pod)

    def bind_pod(self, pod: dict[str, Any]) -> dict[str, Any]:
        """The scheduler binds the pod to the node: PodScheduled, the Scheduled event, ContainerCreating."""
        with self.changed:
            pod["spec"]["nodeName"] = NODE
            pod["status"]["conditions"] = []
            inits = pod["spec"].get("initContainers") or []
            self._condition(pod, "PodScheduled", "True")
            if inits:  # the kubelet's pod status: init containers first (pkg/kubelet/status/generate.go)
                self._condition(pod, "Initialized", "False", "ContainersNotInitialized")
                pod["status"]["initContainerStatuses"] = [
                    self._status_of(c, {"waiting": {"reason": "PodInitializing"}}) for c in inits
                ]
            else:
                self._condition(pod, "Initialized", "True")
            self._condition(pod, "ContainersReady", "False", "ContainersNotReady")
            self._condition(pod, "Ready", "False", "ContainersNotReady")
            self.event(
                pod,
                "Scheduled",
                f"Successfully assigned {self.namespace}/{pod['metadata']['name']} to {NODE}",
                component="default-scheduler",
            )
            self._container(pod, {"waiting": {"reason": "PodInitializing" if inits else "ContainerCreating"}})
            return self.record("pods", pod)

    def _spec_of(self, pod: dict[str, Any], container: str) -> tuple[dict[str, Any], str]:
        """(container spec, the Events' fieldPath) of `container` (default: the first main one)."""
        for key in ("containers", "initContainers"):
            for c in pod["spec"].get(key) or []:
                if c["name"] == container or (not container and key == "containers"):
                    return c, f"spec.{key}{{{c['name']}}}"
        raise KeyError(f"pod {pod['metadata']['name']} has no container {container!r}")

    def image_present(self, pod_name: str, container: str = "") -> None:
        """The image is on the node already (imagePullPolicy IfNotPresent): one Pulled, no Pulling."""
        pod = self.pods[pod_name]
        c, where = self._spec_of(pod, container)
        self.event(pod, "Pulled", f'Container image "{c["image"]}" already present on machine', field_path=where)

    def run_init_containers(self, pod_name: str, pull_s: float = 0.0, run_s: float = 0.0) -> dict[str, Any]:
        """Each init container in turn: the first pulls the image (`pull_s`), each runs `run_s`."""
        pod = self.pods[pod_name]
        for i, c in enumerate(pod["spec"].get("initContainers") or []):
            if i == 0:
                self.pull_image(pod_name, pull_s, container=c["name"])
            else:
                self.image_present(pod_name, c["name"])
            with self.changed:
                where = f"spec.initContainers{{{c['name']}}}"
                self.event(pod, "Created", f"Created container: {c['name']}", field_path=where)
                self.event(pod, "Started", f"Started container {c['name']}", field_path=where)
                started = self.clock.stamp()
                pod["status"]["initContainerStatuses"][i] = self._status_of(c, {"running": {"startedAt": started}})
                self.record("pods", pod)
            self.clock.advance(run_s)
            with self.changed:
                done = {"exitCode": 0, "reason": "Completed", "startedAt": started, "finishedAt": self.clock.stamp()}
                pod["status"]["initContainerStatuses"][i] = self._status_of(c, {"terminated": done})
                self.record("pods", pod)
        with self.changed:
            self._condition(pod, "Initialized", "True")
            self._container(pod, {"waiting": {"reason": "ContainerCreating"}})
            return self.record("pods", pod)

    def _init_pending(self, pod: dict[str, Any]) -> bool:
        return any("terminated" not in s["state"] for s in pod["status"].get("initContainerStatuses") or [])

    def pull_image(
        self, pod_name: str, seconds: float, size: int = 8_123_456_789, fail: str = "", container: str = ""
    ) -> None:
        """Pulling ... then, `seconds` later on the clock, Pulled (or Failed + BackOff)."""
        pod = self.pods[pod_name]
        c, where = self._spec_of(pod, container)
        self.event(pod, "Pulling", f'Pulling image "{c["image"]}"', field_path=where)
        self.clock.advance(seconds)
        with self.changed:
            if fail:
                self.event(pod, "Failed", f'Failed to pull image "{c["image"]}": {fail}', "Warning", field_path=where)
                self.event(pod, "Failed", "Error: ErrImagePull", "Warning", field_path=where)
                self.event(pod, "BackOff", f'Back-off pulling image "{c["image"]}"', field_path=where)
                self.event(pod, "Failed", "Error: ImagePullBackOff", "Warning", field_path=where)
                self._container(
                    pod,
                    {"waiting": {"reason": "ImagePullBackOff", "message": f'Back-off pulling image "{c["image"]}"'}},
                )
                self.record("pods", pod)
                return
            took = go_duration(seconds)
            self.event(
                pod,
                "Pulled",
                f'Successfully pulled image "{c["image"]}" in {took} ({took} including '
                f"waiting). Image size: {size} bytes.",
                field_path=where,
            )

    def start_container(self, pod_name: str) -> dict[str, Any]:
        if self._init_pending(self.pods[pod_name]):  # the kubelet starts none before its init containers
            self.run_init_containers(pod_name)
        with self.changed:
            pod = self.pods[pod_name]
            c = pod["spec"]["containers"][0]
            where = f"spec.containers{{{c['name']}}}"
            self.event(pod, "Created", f"Created container: {c['name']}", field_path=where)
            self.event(pod, "Started", f"Started container {c['name']}", field_path=where)
            pod["status"]["phase"] = "Running"
            pod["status"]["startTime"] = pod["status"].get("startTime") or self.clock.stamp()
            self._container(pod, {"running": {"startedAt": self.clock.stamp()}}, ready=True)
            self._condition(pod, "ContainersReady", "True")
            self._condition(pod, "Ready", "True")
            job = self.jobs.get(pod["metadata"]["labels"].get("job-name", ""))
            if job:
                job["status"]["ready"] = job["status"].get("ready", 0) + 1
                self.record("jobs", job)
            return self.record("pods", pod)

    def finish_container(self, pod_name: str, exit_code: int = 0, reason: str = "") -> dict[str, Any]:
        """The container exits; its pod ends; the Job counts it (and may finish)."""
        with self.changed:
            pod = self.pods[pod_name]
            started = ((pod["status"].get("containerStatuses") or [{}])[0].get("state") or {}).get("running", {})
            reason = reason or ("Completed" if exit_code == 0 else "Error")
            self._container(
                pod,
                {
                    "terminated": {
                        "exitCode": exit_code,
                        "reason": reason,
                        "startedAt": started.get("startedAt", self.clock.stamp()),
                        "finishedAt": self.clock.stamp(),
                    }
                },
            )
            pod["status"]["phase"] = "Succeeded" if exit_code == 0 else "Failed"
            self._condition(pod, "ContainersReady", "False", "PodCompleted" if exit_code == 0 else "PodFailed")
            self._condition(pod, "Ready", "False", "PodCompleted" if exit_code == 0 else "PodFailed")
            self.record("pods", pod)
            job_name = pod["metadata"]["labels"].get("job-name", "")
            job = self.jobs.get(job_name)
            if job:
                st = job["status"]
                st.update(active=max(0, st.get("active", 1) - 1), ready=max(0, st.get("ready", 1) - 1))
                if exit_code == 0:
                    st["succeeded"] = st.get("succeeded", 0) + 1
                    if st["succeeded"] >= int(job["spec"].get("completions") or 1):  # every index done
                        self.finish_job(job_name, "Complete")
                    else:
                        self.record("jobs", job)
                else:
                    st["failed"] = st.get("failed", 0) + 1
                    if st["failed"] > job["spec"].get("backoffLimit", 6) or LABEL_JOBSET in (
                        job["metadata"].get("labels") or {}
                    ):
                        self.finish_job(
                            job_name,
                            "Failed",
                            "BackoffLimitExceeded",
                            failed=st["failed"],
                            message="Job has reached the specified backoff limit",
                        )
                    else:
                        self.record("jobs", job)
            return pod

    def run_job_pod(
        self,
        job_name: str,
        pull_s: float = 10.0,
        run_s: float = 60.0,
        exit_code: int = 0,
        queue_s: float = 0.0,
        stage_s: float = 0.0,
    ) -> dict[str, Any]:
        """The whole life of one pod of the Job, the clock moved through it."""
        self.clock.advance(queue_s)
        name = self.schedule_pod(job_name)["metadata"]["name"]
        self.prepare_pod(name, pull_s, stage_s)
        self.start_container(name)
        self.clock.advance(run_s)
        return self.finish_container(name, exit_code)

    def prepare_pod(self, pod_name: str, pull_s: float = 0.0, stage_s: float = 0.0) -> None:
        """What the kubelet does before the main container starts: with init containers, the
        first pulls the image (the main container then finds it present); else the main pulls."""
        if self.pods[pod_name]["spec"].get("initContainers"):
            self.run_init_containers(pod_name, pull_s, stage_s)
            self.image_present(pod_name)
        else:
            self.pull_image(pod_name, pull_s)

    def _condition(self, pod: dict[str, Any], kind: str, status: str, reason: str = "") -> None:
        conds = pod["status"].setdefault("conditions", [])
        found = next((c for c in conds if c["type"] == kind), None)
        if found and found["status"] == status:
            return
        new = {"type": kind, "status": status, "lastProbeTime": None, "lastTransitionTime": self.clock.stamp()}
        if reason:
            new["reason"] = reason
        if found:
            found.clear()
            found.update(new)
        else:
            conds.append(new)

    def _container(self, pod: dict[str, Any], state: dict[str, Any], ready: bool = False) -> None:
        old = (pod["status"].get("containerStatuses") or [{}])[0]
        status = self._status_of(pod["spec"]["containers"][0], state, ready, old.get("restartCount", 0))
        pod["status"]["containerStatuses"] = [status]

    @staticmethod
    def _status_of(c: dict[str, Any], state: dict[str, Any], ready: bool = False, restarts: int = 0) -> dict[str, Any]:
        """A ContainerStatus (core/v1) of container spec `c` in `state`."""
        status = {
            "name": c["name"],
            "image": c["image"],
            "imageID": "",
            "ready": ready,
            "restartCount": restarts,
            "started": "running" in state,
            "state": copy.deepcopy(state),
        }
        if "running" not in state and "waiting" not in state:
            status["imageID"] = f"{c['image'].split('@')[0]}@sha256:{hashlib.sha256(c['image'].encode()).hexdigest()}"
        return status
