"""TEST DOUBLE of an OpenShift API server, served over TLS on 127.0.0.1 for real clients.

No OpenShift can run here, so this small HTTPS server (its CA made at test time, see
api_double_tls.py) answers what the openshift target and `kubectl` ask: discovery,
OpenAPI v3 (api_double_openapi.py), and create / get / list / watch / patch / delete of
every kind the `clusters/moc` overlay and the target use (Namespace, ServiceAccount,
Secret, PersistentVolumeClaim, Role, RoleBinding, ImageStream, BuildConfig + `instantiate`,
Build, Job, Pod, Kubeflow PyTorchJob), pod `exec` over a WebSocket (channel protocol v4),
`generateName`, resource versions, and watches whose history can expire (410 Gone).
Every bearer token is checked; every body is validated strictly against the upstream
schemas (Kubernetes: kubernetes-validate's strict schemas; OpenShift: the shipped
openshift/api definitions; PyTorchJob: the shipped Kubeflow CRD). The exec of the
collector's tar command runs the real `sh`/`tar`/`sha256sum` on a local folder standing
in for the results PVC. Tests drive pod and job states with the helpers below.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import secrets
import threading
import time
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from bench.targets.manifests import validate_objects
from tests.bench.targets.api_double_http import ApiError, Handler, TextResponse
from tests.bench.targets.api_double_openapi import (
    KUBEFLOW_GROUP,
    RESOURCES,
    Resource,
    api_group_list,
    api_resource_list,
    group_versions,
    openapi_v3_document,
    openapi_v3_root,
    table,
)
from tests.bench.targets.api_double_tls import make_ca

# BuildRequest is not in the shipped subset; its fields per the OpenShift API reference.
BUILD_REQUEST_FIELDS = {
    "kind",
    "apiVersion",
    "metadata",
    "revision",
    "triggeredBy",
    "env",
    "from",
    "binary",
    "lastVersion",
    "dockerStrategyOptions",
    "sourceStrategyOptions",
    "triggeredByImage",
    "buildArgs",
}
REGISTRY = "image-registry.openshift-image-registry.svc:5000"
SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")
# Labels the Kubeflow Training Operator puts on the pods of a PyTorchJob.
KF_JOB_NAME, KF_REPLICA_TYPE, KF_REPLICA_INDEX = (
    "training.kubeflow.org/job-name",
    "training.kubeflow.org/replica-type",
    "training.kubeflow.org/replica-index",
)


def rfc3339(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _matches(obj: dict[str, Any], selector: str | None) -> bool:
    labels = obj.get("metadata", {}).get("labels") or {}
    for term in filter(None, (selector or "").split(",")):
        key, _, value = term.partition("=")
        if labels.get(key) != value:
            return False
    return True


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (strategic-merge directives are dropped: lists replace)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


class OpenShiftApiDouble:
    """State of one fake namespace plus the HTTPS server that exposes it."""

    def __init__(
        self,
        namespace: str,
        volume: Path,
        schema_path: Path,
        token: str = "test-token",
        kubeflow: bool = True,
        history: int = 1000,
    ) -> None:
        self.namespace, self.volume, self.token = namespace, Path(volume), token
        self.schema_path = Path(schema_path)
        self.resources = [r for r in RESOURCES if kubeflow or r.group_version != KUBEFLOW_GROUP]
        self.store: dict[str, dict[str, dict[str, Any]]] = {r.plural: {} for r in RESOURCES}
        self.requests: list[tuple[str, str, Any]] = []  # (method, path, body)
        self.forbidden: set[str] = set()  # resource names answered with 403
        self.exec_commands: list[list[str]] = []
        self.pod_logs: dict[str, str] = {}  # what `pods/NAME/log` answers
        self.deleted: list[tuple[str, dict[str, Any] | None]] = []
        # What a new build does: called with the Build dict, may change its status.
        self.on_build: Callable[[dict[str, Any]], None] = self.complete_build
        # Watch history: (resourceVersion, plural, event type, object); older ones expire.
        self.events: list[tuple[int, str, str, dict[str, Any]]] = []
        self.history = history
        self.stopping = False
        self.oldest_rv = 1
        self._rv = itertools.count(2)
        self._serial = itertools.count(1)
        self.changed = threading.Condition()
        self.ca = make_ca()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.double = self  # type: ignore[attr-defined]
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    # -- lifecycle ----------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.server.server_address[1]}"

    def start(self, tls_folder: Path | None = None) -> OpenShiftApiDouble:
        folder = tls_folder or self.volume.parent
        ctx = self.ca.server_context(folder)
        # Handshakes happen lazily, in each connection's own thread, never in accept().
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True, do_handshake_on_connect=False)
        self.thread.start()
        return self

    def stop(self) -> None:
        with self.changed:
            self.stopping = True
            self.changed.notify_all()
        self.server.shutdown()
        self.server.server_close()

    def write_kubeconfig(self, path: Path, token: str | None = None) -> Path:
        import base64

        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "double",
            "clusters": [
                {
                    "name": "double",
                    "cluster": {
                        "server": self.url,
                        "certificate-authority-data": base64.b64encode(self.ca.ca_pem).decode(),
                    },
                }
            ],
            "users": [{"name": "u", "user": {"token": token or self.token}}],
            "contexts": [
                {"name": "double", "context": {"cluster": "double", "user": "u", "namespace": self.namespace}}
            ],
        }
        path.write_text(yaml.safe_dump(cfg))
        return path

    # -- stores by name (what tests look at) -------------------------------------------
    @property
    def buildconfigs(self) -> dict[str, dict[str, Any]]:
        return self.store["buildconfigs"]

    @property
    def builds(self) -> dict[str, dict[str, Any]]:
        return self.store["builds"]

    @property
    def jobs(self) -> dict[str, dict[str, Any]]:
        return self.store["jobs"]

    @property
    def pods(self) -> dict[str, dict[str, Any]]:
        return self.store["pods"]

    @property
    def pytorchjobs(self) -> dict[str, dict[str, Any]]:
        return self.store["pytorchjobs"]

    # -- changes: every one gets a resource version and a watch event --------------------
    def record(self, plural: str, obj: dict[str, Any], kind: str = "MODIFIED") -> dict[str, Any]:
        """Store `obj` (or forget it, for DELETED), bump its resourceVersion, wake watchers."""
        with self.changed:
            rv = next(self._rv)
            obj.setdefault("metadata", {})["resourceVersion"] = str(rv)
            if kind == "DELETED":
                self.store[plural].pop(obj["metadata"]["name"], None)
            else:
                self.store[plural][obj["metadata"]["name"]] = obj
            self.events.append((rv, plural, kind, copy.deepcopy(obj)))
            if len(self.events) > self.history:
                self.compact(len(self.events) - self.history)
            self.changed.notify_all()
        return obj

    def compact(self, count: int | None = None) -> None:
        """Forget watch history (all of it by default): older resourceVersions get 410 Gone."""
        with self.changed:
            drop = len(self.events) if count is None else count
            if drop:
                self.oldest_rv = self.events[drop - 1][0] + 1
                del self.events[:drop]

    @property
    def resource_version(self) -> str:
        return str(self.events[-1][0]) if self.events else str(self.oldest_rv)

    # -- validation of what clients send --------------------------------------------
    def validate(self, obj: dict[str, Any]) -> None:
        probe = copy.deepcopy(obj)
        meta = probe.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "x"
        problems = validate_objects([probe], self.schema_path)
        if problems:
            raise ApiError(422, "Invalid", "; ".join(problems))

    # -- scenario helpers used by tests ---------------------------------------------
    def add_buildconfig(self, name: str) -> None:
        bc = {
            "apiVersion": "build.openshift.io/v1",
            "kind": "BuildConfig",
            "metadata": {"name": name, "namespace": self.namespace},
            "spec": {
                "strategy": {"type": "Docker", "dockerStrategy": {}},
                "output": {"to": {"kind": "ImageStreamTag", "name": f"{name}:latest"}},
            },
        }
        self.validate(bc)
        self.record("buildconfigs", bc, "ADDED")

    def complete_build(self, build: dict[str, Any]) -> None:
        digest = "sha256:" + hashlib.sha256(build["metadata"]["name"].encode()).hexdigest()
        bc = build["metadata"]["labels"]["buildconfig"]
        build["status"] = {
            "phase": "Complete",
            "outputDockerImageReference": f"{REGISTRY}/{self.namespace}/{bc}:latest",
            "output": {"to": {"imageDigest": digest}},
        }

    def job_pods(self, job_name: str) -> list[dict[str, Any]]:
        return [p for p in self.pods.values() if p["metadata"]["labels"].get("job-name") == job_name]

    def add_job_pod(self, job_name: str, phase: str, **state: Any) -> dict[str, Any]:
        """A pod of the Job in the given state, as the kubelet would report it."""
        job = self.jobs[job_name]
        name = f"{job_name}-{secrets.token_hex(3)[:5]}"[-63:]
        labels = dict(job["spec"]["template"]["metadata"].get("labels", {}), **{"job-name": job_name})
        return self.add_pod(name, labels, job["spec"]["template"]["spec"], phase, **state)

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
    ) -> dict[str, Any]:
        image = spec["containers"][0]["image"]
        state: dict[str, Any] = {}
        if waiting:
            state = {"waiting": {"reason": waiting, "message": f'Back-off pulling image "{image}"'}}
        elif terminated:
            state = {
                "terminated": {
                    "reason": terminated,
                    "exitCode": exit_code,
                    "startedAt": rfc3339(started or time.time()),
                    "finishedAt": rfc3339(time.time()),
                }
            }
        elif phase == "Running":
            state = {"running": {"startedAt": rfc3339(started or time.time())}}
        status: dict[str, Any] = {"phase": phase, "conditions": []}
        if state:
            status["containerStatuses"] = [
                {
                    "name": spec["containers"][0]["name"],
                    "image": image,
                    "imageID": "",
                    "ready": phase == "Running",
                    "restartCount": 0,
                    "state": state,
                }
            ]
        if evicted:
            status.update(reason="Evicted", message="The node was low on resource: memory.")
            status["conditions"].append(
                {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet"}
            )
        if unschedulable:
            status["conditions"].append(
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": unschedulable}
            )
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": labels,
                "uid": f"uid-{next(self._serial)}",
                "creationTimestamp": rfc3339(time.time()),
            },
            "spec": copy.deepcopy(spec),
            "status": status,
        }
        return self.record("pods", pod, "ADDED")

    def finish_job(self, job_name: str, condition: str, reason: str = "", failed: int = 0, message: str = "") -> None:
        now = rfc3339(time.time())
        job = self.jobs[job_name]
        status = job.setdefault("status", {})
        status["conditions"] = [
            {
                "type": condition,
                "status": "True",
                "reason": reason or condition,
                "message": message,
                "lastTransitionTime": now,
            }
        ]
        if condition == "Complete":
            status["completionTime"] = now
            status["succeeded"] = 1
        status["failed"] = failed
        self.record("jobs", job)

    def set_pytorchjob_condition(self, job_name: str, condition: str, reason: str = "", message: str = "") -> None:
        """Append a condition as the operator does: Created, Running, Restarting, Succeeded, Failed."""
        job = self.pytorchjobs[job_name]
        status = job.setdefault("status", {})
        now = rfc3339(time.time())
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

    # -- routing ----------------------------------------------------------------------
    def resource(self, plural: str) -> Resource:
        for r in self.resources:
            if r.plural == plural:
                return r
        raise ApiError(404, "NotFound", f"the server could not find the requested resource ({plural})")

    def discovery(self, path: str) -> dict[str, Any] | None:
        if path == "/version":
            return {"major": "1", "minor": "33", "gitVersion": "v1.33.0", "platform": "linux/amd64"}
        if path == "/api":
            return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
        if path == "/apis":
            return api_group_list(self.resources)
        if path == "/openapi/v3":
            return openapi_v3_root(self.resources)
        parts = [p for p in path.split("/") if p]
        offset = 2 if parts[:2] == ["openapi", "v3"] else 0
        gv_parts = parts[offset:]
        if gv_parts[:1] == ["api"] and len(gv_parts) == 2 or gv_parts[:1] == ["apis"] and len(gv_parts) == 3:
            gv = "/".join(gv_parts[1:])
            if gv not in group_versions(self.resources):
                raise ApiError(404, "NotFound", f"no group version {gv}")
            if offset:
                return openapi_v3_document(gv, self.resources, self.schema_path)
            return api_resource_list(gv, self.resources)
        return None

    def parse(self, path: str) -> tuple[Resource, str | None, str | None]:
        """(resource, name, subresource) of an object path; 404 for anything else."""
        parts = [p for p in path.split("/") if p]
        rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
        if rest[:1] == ["namespaces"] and len(rest) >= 3:
            if rest[1] != self.namespace:
                raise ApiError(404, "NotFound", f'namespaces "{rest[1]}" not found')
            rest = rest[2:]
        elif rest[:1] == ["namespaces"]:
            rest = ["namespaces", *rest[1:]]
        if not rest:
            raise ApiError(404, "NotFound", f"no such path {path}")
        return self.resource(rest[0]), (rest[1] if len(rest) > 1 else None), (rest[2] if len(rest) > 2 else None)

    def route(
        self, method: str, path: str, query: dict[str, list[str]], body: Any, accept: str = ""
    ) -> tuple[int, dict[str, Any]]:
        found = self.discovery(path)
        if found is not None:
            return 200, found
        r, name, sub = self.parse(path)
        verb = {"POST": "create", "DELETE": "delete", "PATCH": "patch"}.get(method, "get" if name else "list")
        if r.plural in self.forbidden:
            raise ApiError(
                403,
                "Forbidden",
                f'{r.plural} is forbidden: User "dev" cannot {verb} '
                f'resource "{r.plural}" in the namespace "{self.namespace}"',
            )
        store = self.store[r.plural]
        if method == "GET" and name is None:
            selector = (query.get("labelSelector") or [None])[0]
            items = [o for o in store.values() if _matches(o, selector)]
            if "as=Table" in accept:
                return 200, table(r, items)
            return 200, {
                "kind": f"{r.kind}List",
                "apiVersion": r.group_version,
                "metadata": {"resourceVersion": self.resource_version},
                "items": items,
            }
        if method == "POST" and name is None:
            return self._create(r, body, query)
        if method == "POST" and r.plural == "buildconfigs" and sub == "instantiate":
            return self._instantiate(name, body)
        if name not in store:
            raise ApiError(404, "NotFound", f'{r.plural}{"." + r.group if r.group else ""} "{name}" not found')
        if method == "GET" and r.plural == "pods" and sub == "log":
            lines = self.pod_logs.get(name, "").splitlines(keepends=True)
            tail = int((query.get("tailLines") or ["0"])[0])
            raise TextResponse("".join(lines[-tail:] if tail else lines))
        if method == "GET":
            return 200, store[name]
        if method == "PATCH":
            patched = merge_patch(store[name], body)
            self.validate({k: v for k, v in patched.items() if k != "status"})
            return 200, self.record(r.plural, patched)
        if method == "DELETE":
            self.deleted.append((f"{r.plural}/{name}", body))
            obj = self.record(r.plural, store[name], "DELETED")
            for pod in self._owned_pods(r.plural, name):
                self.record("pods", pod, "DELETED")
            return 200, obj
        raise ApiError(405, "MethodNotAllowed", f"{method} {path}")

    def _owned_pods(self, plural: str, name: str) -> list[dict[str, Any]]:
        label = {"jobs": "job-name", "pytorchjobs": KF_JOB_NAME}.get(plural)
        return [p for p in list(self.pods.values()) if label and p["metadata"]["labels"].get(label) == name]

    def _create(self, r: Resource, body: Any, query: dict[str, list[str]]) -> tuple[int, dict[str, Any]]:
        if not isinstance(body, dict) or body.get("kind") != r.kind:
            raise ApiError(400, "BadRequest", f"the body is not a {r.kind}")
        self.validate(body)
        obj = copy.deepcopy(body)
        meta = obj.setdefault("metadata", {})
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise ApiError(
                    422,
                    "Invalid",
                    f"{r.kind} is invalid: metadata.name: Required value: name or generateName is required",
                )
            alphabet = "bcdfghjklmnpqrstvwxz2456789"  # what the apiserver's name generator uses
            meta["name"] = meta["generateName"] + "".join(secrets.choice(alphabet) for _ in range(5))
        if meta["name"] in self.store[r.plural]:
            raise ApiError(
                409, "AlreadyExists", f'{r.plural}{"." + r.group if r.group else ""} "{meta["name"]}" already exists'
            )
        if r.namespaced:
            if meta.get("namespace", self.namespace) != self.namespace:
                raise ApiError(
                    400,
                    "BadRequest",
                    "the namespace of the provided object does not match the namespace sent on the request",
                )
            meta["namespace"] = self.namespace
        meta.update(uid=f"uid-{next(self._serial)}", creationTimestamp=rfc3339(time.time()), generation=1)
        if "dryRun" in query:
            return 201, obj
        obj["status"] = (
            {"phase": "Running"} if r.plural == "pods" else ({"phase": "Active"} if r.plural == "namespaces" else {})
        )
        return 201, self.record(r.plural, obj, "ADDED")

    def _instantiate(self, bc_name: str | None, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if bc_name not in self.buildconfigs:
            raise ApiError(404, "NotFound", f'buildconfigs.build.openshift.io "{bc_name}" not found')
        unknown = set(body) - BUILD_REQUEST_FIELDS
        if body.get("kind") != "BuildRequest" or body.get("apiVersion") != "build.openshift.io/v1" or unknown:
            raise ApiError(400, "BadRequest", f"not a BuildRequest (unknown fields: {sorted(unknown)})")
        if body.get("metadata", {}).get("name") != bc_name:
            raise ApiError(400, "BadRequest", "metadata.name must name the BuildConfig")
        name = f"{bc_name}-{len(self.builds) + 1}"
        build = {
            "apiVersion": "build.openshift.io/v1",
            "kind": "Build",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "creationTimestamp": rfc3339(time.time()),
                "labels": {"buildconfig": bc_name, "openshift.io/build-config.name": bc_name},
            },
            "spec": {
                "revision": body["revision"],
                "strategy": {"type": "Docker", "dockerStrategy": {}},
                "output": {"to": {"kind": "ImageStreamTag", "name": f"{bc_name}:latest"}},
                "triggeredBy": body.get("triggeredBy") or [],
            },
            "status": {"phase": "New"},
        }
        self.on_build(build)
        self.validate(build)  # revision, triggeredBy and the status on_build set, against Build's schema
        return 201, self.record("builds", build, "ADDED")

    # -- watches ----------------------------------------------------------------------
    def watch_events(self, plural: str, since: str | None, selector: str | None, timeout_s: float) -> Any:
        """Yield (type, object) events after `since`; one ERROR 410 event if it expired."""
        deadline = time.monotonic() + timeout_s
        with self.changed:
            if since in (None, "", "0"):
                last = int(self.resource_version)
                initial = [("ADDED", copy.deepcopy(o)) for o in self.store[plural].values() if _matches(o, selector)]
            else:
                last, initial = int(since), []
                if last < self.oldest_rv - 1:
                    gone = ApiError(410, "Expired", f"too old resource version: {since} ({self.oldest_rv})")
                    initial = [("ERROR", gone.status())]
                    last = -1
        yield from initial
        while last >= 0 and not self.stopping:
            with self.changed:
                fresh = [e for e in self.events if e[0] > last]
                if not fresh:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return
                    self.changed.wait(min(remaining, 0.5))
                    continue
            for rv, p, kind, obj in fresh:
                last = rv
                if p == plural and _matches(obj, selector):
                    yield kind, obj
