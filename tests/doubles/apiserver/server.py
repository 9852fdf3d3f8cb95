"""TEST DOUBLE of an OpenShift API server, served over TLS on 127.0.0.1 for real clients.

No OpenShift can run here, so this HTTPS server answers what the openshift target,
`kubectl` and the Python client ask, with the API server's semantics: discovery (short
names, categories), OpenAPI v3, create / get / list / watch / replace / patch (JSON, merge,
strategic, server-side apply) / delete with dry-run, upstream validation (validate.py),
managed fields, namespace termination, server-side Tables, BuildConfig `instantiate` and
webhooks (webhooks.py), Kubeflow Trainer v2 TrainJobs made into JobSets (trainer.py), pod `exec`
over WebSocket and pod logs. Time comes from a Clock
the test advances; the controllers' and kubelet's writes are in lifecycle.py. A Kubelet
(kubelet.py) makes pods really run here and Kueue (kueue.py) admits queued Jobs; the
clock then follows the wall's. It serves one namespace.
"""

from __future__ import annotations

import base64
import copy
import itertools
import threading
import time
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from tests.doubles.apiserver.clock import Clock
from tests.doubles.apiserver.errors import ApiError, RawResponse, TextResponse, invalid, not_found
from tests.doubles.apiserver.http import Handler
from tests.doubles.apiserver.lifecycle import Lifecycle
from tests.doubles.apiserver.openapi import OPENAPI_V2_PROTOBUF, openapi_v3_document, openapi_v3_root
from tests.doubles.apiserver.protobuf import request_body
from tests.doubles.apiserver.rbac import REVIEWS, review, review_path, user_groups
from tests.doubles.apiserver.resources import (
    JOBSET_GROUP,
    KUBEFLOW_GROUP,
    RESOURCES,
    SERVER_VERSION,
    TRAINER_GROUP,
    Resource,
    api_group_list,
    api_resource_list,
    api_versions,
    group_versions,
)
from tests.doubles.apiserver.scenarios import KF_JOB_NAME, Scenarios
from tests.doubles.apiserver.schema import Schemas
from tests.doubles.apiserver.selectors import Matcher, compile_selectors
from tests.doubles.apiserver.tables import table
from tests.doubles.apiserver.tls import make_ca
from tests.doubles.apiserver.trainer import LABEL_JOBSET, Trainer
from tests.doubles.apiserver.validate import validate_object
from tests.doubles.apiserver.watchlist import WatchMode, initial_events_end, list_options
from tests.doubles.apiserver.webhooks import Webhooks
from tests.doubles.apiserver.writes import Writes

# BuildRequest is not in the shipped subset; its fields per the OpenShift API reference
# (https://docs.openshift.com/container-platform/4.16/rest_api/workloads_apis/buildrequest-build-openshift-io-v1.html).
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


class OpenShiftApiDouble(Writes, Lifecycle, Scenarios, Webhooks, Trainer):
    """State of one namespace plus the HTTPS server that exposes it."""

    def __init__(
        self,
        namespace: str,
        volume: Path,
        schema_path: Path,
        token: str = "test-token",
        kubeflow: bool = True,
        trainer: bool = True,
        history: int = 1000,
        clock: Clock | None = None,
        create_namespace: bool = True,
    ) -> None:
        self.namespace, self.volume, self.token = namespace, Path(volume), token
        self.schema_path = Path(schema_path)
        self.schemas = Schemas(self.schema_path)
        self.clock = clock or Clock()
        self.clock.on_advance.append(self.tick)
        absent = ({KUBEFLOW_GROUP} if not kubeflow else set()) | (
            {TRAINER_GROUP, JOBSET_GROUP} if not trainer else set()
        )
        self.resources = [r for r in RESOURCES if r.group_version not in absent]
        self.store: dict[str, dict[str, dict[str, Any]]] = {r.plural: {} for r in RESOURCES}
        self.requests: list[tuple[str, str, Any]] = []  # (method, path, body)
        self.chunked_bodies = 0  # request bodies that came chunked
        self.watches_opened = 0  # watch streams served so far
        self.warnings: list[str] = []  # Warning headers sent (unknown fields under fieldValidation=Warn)
        self.forbidden: set[str] = set()  # resource names answered with 403
        self.exec_commands: list[list[str]] = []
        self.pod_logs: dict[str, str] = {}  # what `pods/NAME/log` answers
        self.deleted: list[tuple[str, dict[str, Any] | None]] = []
        # What a new build does: called with the Build dict, may change its status.
        self.on_build: Callable[[dict[str, Any]], None] = self.complete_build
        self.events: list[tuple[int, str, str, dict[str, Any]]] = []  # watch history
        self.history = history
        # Pods clients create (the collector) run at once; False leaves them Pending for the test.
        self.autostart_pods = True
        self._openapi: dict[str, Any] = {}
        self.stopping = False
        self.oldest_rv = 1
        self._rv = itertools.count(2)
        self._serial = itertools.count(1)
        self.changed = threading.Condition(threading.RLock())
        self._cond = self.changed
        self.ca = make_ca()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.double = self  # type: ignore[attr-defined]
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        if create_namespace:
            ns = {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": namespace,
                    "uid": self.new_uid(),
                    "creationTimestamp": self.clock.stamp(),
                    "labels": {"kubernetes.io/metadata.name": namespace},
                },
                "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active"},
            }
            self.record("namespaces", ns, "ADDED")

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
        with self._cond:
            self.stopping = True
            self._cond.notify_all()
        self.server.shutdown()
        self.server.server_close()

    def write_kubeconfig(self, path: Path, token: str | None = None) -> Path:
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

    def new_uid(self) -> str:
        n = next(self._serial)
        return f"00000000-0000-4000-8000-{n:012d}"

    def _serial_peek(self) -> int:
        return next(self._serial)

    # -- stores by name (what tests look at) -------------------------------------------
    buildconfigs = property(lambda self: self.store["buildconfigs"])
    builds = property(lambda self: self.store["builds"])
    jobs = property(lambda self: self.store["jobs"])
    pods = property(lambda self: self.store["pods"])
    pytorchjobs = property(lambda self: self.store["pytorchjobs"])
    trainjobs = property(lambda self: self.store["trainjobs"])
    jobsets = property(lambda self: self.store["jobsets"])

    def events_for(self, name: str) -> list[dict[str, Any]]:
        """Events about the object `name`, oldest first."""
        return [e for e in self.store["events"].values() if e["involvedObject"]["name"] == name]

    # -- changes: every one gets a resource version and a watch event --------------------
    def record(self, plural: str, obj: dict[str, Any], kind: str = "MODIFIED") -> dict[str, Any]:
        """Store `obj` (or forget it, for DELETED), bump its resourceVersion, wake watchers."""
        with self._cond:
            rv = next(self._rv)
            obj.setdefault("metadata", {})["resourceVersion"] = str(rv)
            if kind == "DELETED":
                self.store[plural].pop(obj["metadata"]["name"], None)
            else:
                self.store[plural][obj["metadata"]["name"]] = obj
            self.events.append((rv, plural, kind, copy.deepcopy(obj)))
            if len(self.events) > self.history:
                self.compact(len(self.events) - self.history)
            self._cond.notify_all()
        return obj

    def compact(self, count: int | None = None) -> None:
        """Forget watch history (all of it by default): older resourceVersions get 410 Gone."""
        with self._cond:
            drop = len(self.events) if count is None else count
            if drop:
                self.oldest_rv = self.events[drop - 1][0] + 1
                del self.events[:drop]

    @property
    def resource_version(self) -> str:
        return str(self.events[-1][0]) if self.events else str(self.oldest_rv)

    def validate(self, obj: dict[str, Any]) -> None:
        """The create rules, for objects a scenario writes directly (a BuildConfig, a Build)."""
        errs = validate_object(obj["kind"], obj)
        if errs:
            raise invalid(obj["kind"], "", obj["metadata"].get("name", ""), errs.items)

    # -- routing ----------------------------------------------------------------------
    def resource(self, plural: str) -> Resource:
        for r in self.resources:
            if r.plural == plural:
                return r
        raise ApiError(404, "NotFound", "the server could not find the requested resource")

    def discovery(self, path: str) -> Any:
        if path.rstrip("/") == "/version":  # the Python client asks /version/
            return SERVER_VERSION
        if path == "/api":
            return api_versions()
        if path == "/apis":
            return api_group_list(self.resources)
        if path == "/openapi/v3":
            return openapi_v3_root(self.resources)
        if path == "/openapi/v2":
            raise RawResponse(OPENAPI_V2_PROTOBUF, "application/octet-stream")
        parts = [p for p in path.split("/") if p]
        offset = 2 if parts[:2] == ["openapi", "v3"] else 0
        gv_parts = parts[offset:]
        if gv_parts[:1] == ["api"] and len(gv_parts) == 2 or gv_parts[:1] == ["apis"] and len(gv_parts) == 3:
            gv = "/".join(gv_parts[1:])
            if gv not in group_versions(self.resources):
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            if offset:
                if gv not in self._openapi:
                    self._openapi[gv] = openapi_v3_document(gv, self.resources, self.schema_path)
                return self._openapi[gv]
            return api_resource_list(gv, self.resources)
        return None

    def parse(self, path: str) -> tuple[Resource, str | None, str | None]:
        """(resource, name, subresource) of an object path; 404 for anything else."""
        parts = [p for p in path.split("/") if p]
        rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
        if rest[:1] == ["namespaces"] and len(rest) >= 3:
            if rest[1] != self.namespace:
                raise not_found("namespaces", "", rest[1])
            rest = rest[2:]
        if not rest:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return self.resource(rest[0]), (rest[1] if len(rest) > 1 else None), (rest[2] if len(rest) > 2 else None)

    def route(self, method: str, path: str, query: dict[str, list[str]], raw: bytes, headers: Any) -> tuple[int, Any]:
        reviewed = review_path(path)
        if reviewed and method == "POST":
            return 201, self.access_review(*reviewed, raw, headers)
        found = self.discovery(path)
        if found is not None:
            return 200, found
        r, name, sub = self.parse(path)
        verb = {"POST": "create", "DELETE": "delete", "PATCH": "patch", "PUT": "update"}.get(
            method, "get" if name else "list"
        )
        if r.plural in self.forbidden:
            raise ApiError(
                403,
                "Forbidden",
                f'{r.plural} is forbidden: User "dev" cannot {verb} '
                f'resource "{r.plural}" in API group "{r.group}" in the namespace "{self.namespace}"',
            )
        if r.plural == "endpoints":  # the deprecation every 1.33+ server warns of (KEP-4974)
            self.warnings.append("v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice")
        agent = headers.get("User-Agent", "")
        content_type = headers.get("Content-Type", "")
        body = request_body(raw, content_type, r.kind) if method in ("POST", "PUT", "DELETE") else None
        store = self.store[r.plural]
        if method == "GET" and name is None:
            list_options(query, watch=False)
            matches = self.selectors(r, query)
            items = [o for o in store.values() if matches(o)]
            if "as=Table" in headers.get("Accept", ""):
                return 200, table(r, items, self.clock.now(), self.resource_version)
            return 200, {
                "kind": f"{r.kind}List",
                "apiVersion": r.group_version,
                "metadata": {"resourceVersion": self.resource_version},
                "items": items,
            }
        if method == "POST" and name is None:
            return self.create(r, body, query, agent)
        if method == "POST" and r.plural == "buildconfigs" and sub == "instantiate":
            return self._instantiate(name, body)
        if method == "PATCH" and sub is None:
            return self.patch(r, name, raw, headers.get("Content-Type", ""), query, agent)
        if name not in store:
            raise not_found(r.plural, r.group, name)
        if method == "GET" and r.plural == "pods" and sub == "log":
            lines = self.pod_logs.get(name, "").splitlines(keepends=True)
            tail = int((query.get("tailLines") or ["0"])[0])
            raise TextResponse("".join(lines[-tail:] if tail else lines))
        if method == "GET" and sub in (None, "status"):
            if "as=Table" in headers.get("Accept", ""):
                return 200, table(r, [store[name]], self.clock.now(), self.resource_version)
            return 200, store[name]
        if method == "PUT" and sub is None:
            return self.replace(r, name, body, query, agent)
        if method in ("PUT", "PATCH") and sub == "status":
            obj = store[name]
            new = body if method == "PUT" else _merge_status(obj, _json_body(raw))
            obj["status"] = copy.deepcopy((new or {}).get("status") or {})
            return 200, obj if "dryRun" in query else self.record(r.plural, obj)
        if method == "DELETE" and sub is None:
            return self.delete(r, name, body, query)
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    def access_review(self, namespace: str | None, plural: str, raw: bytes, headers: Any) -> dict[str, Any]:
        """`kubectl auth can-i` (rbac.py): the requester is the impersonated user (`--as`), else the token's."""
        if namespace is not None and namespace != self.namespace:
            raise not_found("namespaces", "", namespace)
        body = request_body(raw, headers.get("Content-Type", ""), REVIEWS[plural])
        user = headers.get("Impersonate-User")
        groups = user_groups(user, headers.get_all("Impersonate-Group") or []) if user else []
        return review(self.store, self.namespace, plural, namespace, body, user or "dev", groups, admin=not user)

    def owned_pods(self, plural: str, name: str) -> list[dict[str, Any]]:
        label = {"jobs": "job-name", "pytorchjobs": KF_JOB_NAME, "jobsets": LABEL_JOBSET}.get(plural)
        return [p for p in list(self.pods.values()) if label and p["metadata"]["labels"].get(label) == name]

    def _instantiate(self, bc_name: str | None, body: Any) -> tuple[int, dict[str, Any]]:
        if bc_name not in self.buildconfigs:
            raise not_found("buildconfigs", "build.openshift.io", bc_name or "")
        body = body or {}
        unknown = set(body) - BUILD_REQUEST_FIELDS
        if body.get("kind") != "BuildRequest" or body.get("apiVersion") != "build.openshift.io/v1" or unknown:
            raise ApiError(400, "BadRequest", f"not a BuildRequest (unknown fields: {sorted(unknown)})")
        if body.get("metadata", {}).get("name") != bc_name:
            raise ApiError(400, "BadRequest", "metadata.name must name the BuildConfig")
        self._ns_admission(self.resource("builds"), bc_name)
        bc = self.buildconfigs[bc_name]
        version = bc.setdefault("status", {}).get("lastVersion", 0) + 1
        bc["status"]["lastVersion"] = version
        self.record("buildconfigs", bc)
        name = f"{bc_name}-{version}"
        build = {
            "apiVersion": "build.openshift.io/v1",
            "kind": "Build",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "uid": self.new_uid(),
                "creationTimestamp": self.clock.stamp(),
                "labels": {"buildconfig": bc_name, "openshift.io/build-config.name": bc_name},
                "annotations": {"openshift.io/build.number": str(version)},
            },
            "spec": {
                **({"source": copy.deepcopy(bc["spec"]["source"])} if bc["spec"].get("source") else {}),
                "revision": body.get("revision") or {"type": "Git", "git": {}},
                "strategy": {"type": "Docker", "dockerStrategy": {}},
                "output": {"to": {"kind": "ImageStreamTag", "name": f"{bc_name}:latest"}},
                "triggeredBy": body.get("triggeredBy") or [],
            },
            "status": {"phase": "New"},
        }
        self.on_build(build)
        self.validate(build)
        return 201, self.record("builds", build, "ADDED")

    # -- watches ----------------------------------------------------------------------
    def selectors(self, r: Resource, query: dict[str, list[str]]) -> Matcher:
        """The request's label and field selectors as one predicate (selectors.py); 400 if refused."""
        return compile_selectors(
            r.kind, (query.get("labelSelector") or [None])[0], (query.get("fieldSelector") or [None])[0]
        )

    def watch_events(
        self, r: Resource, since: str | None, matches: Matcher, timeout_s: float, mode: WatchMode | None = None
    ) -> Any:
        """Yield (type, object) events after `since`; one ERROR 410 event if it expired.

        Without sendInitialEvents, resourceVersion unset or "0" starts with the current state
        as ADDED events (the legacy semantics); sendInitialEvents=true does so at any
        resourceVersion and ends them with the initial-events-end BOOKMARK when bookmarks are
        allowed (watchlist.py); sendInitialEvents=false never sends them.
        """
        mode = mode or WatchMode(None, False)
        deadline = time.monotonic() + timeout_s
        with self._cond:
            current = [("ADDED", copy.deepcopy(o)) for o in self.store[r.plural].values() if matches(o)]
            if mode.send_initial_events or mode.send_initial_events is None and since in (None, "", "0"):
                last, initial = int(self.resource_version), current
                if mode.send_initial_events and mode.bookmarks:
                    initial.append(("BOOKMARK", initial_events_end(r, self.resource_version)))
            elif since in (None, "", "0"):
                last, initial = int(self.resource_version), []
            else:
                last, initial = int(since), []
                if last < self.oldest_rv - 1:
                    gone = ApiError(410, "Expired", f"too old resource version: {since} ({self.oldest_rv})")
                    initial = [("ERROR", gone.status())]
                    last = -1
            self.watches_opened += 1  # counted once its starting point is fixed
        yield from initial
        while last >= 0 and not self.stopping:
            with self._cond:
                fresh = [e for e in self.events if e[0] > last]
                if not fresh:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return
                    self._cond.wait(min(remaining, 0.5))
                    continue
            for rv, p, kind, obj in fresh:
                last = rv
                if p == r.plural and matches(obj):
                    yield kind, obj


def _json_body(raw: bytes) -> Any:
    import json

    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        raise ApiError(415, "UnsupportedMediaType", "the body of the request was in an unknown format") from None


def _merge_status(obj: dict[str, Any], patch: Any) -> dict[str, Any]:
    from tests.doubles.apiserver.patch import merge_patch

    return merge_patch(obj, patch)
