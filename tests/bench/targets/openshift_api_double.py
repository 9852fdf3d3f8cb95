"""TEST DOUBLE of the OpenShift API server, served on 127.0.0.1 for the real `kubernetes` client.

No OpenShift can run here, so this small HTTP server answers the calls the openshift
target makes: discovery (/version, /api, /apis, group versions), BuildConfigs, Builds
and `instantiate`, Jobs, Pods, and pod `exec` over a WebSocket (channel protocol v4).
Every request body is validated strictly against upstream schemas (Kubernetes kinds:
kubernetes-validate's strict 1.33 schemas; OpenShift kinds: the shipped OpenShift API
definitions). The exec of the collector's tar command runs the real `sh`/`tar`/`sha256sum`
on a local folder standing in for the results PVC. Tests drive pod and Job states.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import jsonschema
import kubernetes_validate
import yaml

from bench.targets.manifests import KUBERNETES_VERSION, openshift_definitions

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
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


def rfc3339(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _resource(name: str, kind: str, verbs: list[str], namespaced: bool = True) -> dict[str, Any]:
    return {"name": name, "singularName": "", "namespaced": namespaced, "kind": kind, "verbs": verbs}


GROUPS = {
    "v1": [
        _resource("pods", "Pod", ["create", "delete", "get", "list"]),
        _resource("pods/exec", "PodExecOptions", ["create", "get"]),
        _resource("namespaces", "Namespace", ["get", "list"], namespaced=False),
    ],
    "batch/v1": [_resource("jobs", "Job", ["create", "delete", "get", "list"])],
    "build.openshift.io/v1": [
        _resource("buildconfigs", "BuildConfig", ["create", "delete", "get", "list"]),
        _resource("buildconfigs/instantiate", "BuildRequest", ["create"]),
        _resource("builds", "Build", ["create", "delete", "get", "list"]),
    ],
    "image.openshift.io/v1": [_resource("imagestreams", "ImageStream", ["create", "delete", "get", "list"])],
}


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message


def _matches(obj: dict[str, Any], selector: str | None) -> bool:
    labels = obj.get("metadata", {}).get("labels") or {}
    for term in filter(None, (selector or "").split(",")):
        key, _, value = term.partition("=")
        if labels.get(key) != value:
            return False
    return True


class OpenShiftApiDouble:
    """State of one fake namespace plus the HTTP server that exposes it."""

    def __init__(self, namespace: str, volume: Path, schema_path: Path, token: str = "test-token") -> None:
        self.namespace, self.volume, self.token = namespace, Path(volume), token
        self.definitions = openshift_definitions(schema_path)
        self.buildconfigs: dict[str, dict[str, Any]] = {}
        self.builds: dict[str, dict[str, Any]] = {}
        self.jobs: dict[str, dict[str, Any]] = {}
        self.pods: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str, Any]] = []  # (method, path, body)
        self.forbidden: set[str] = set()  # resource names answered with 403
        self.exec_commands: list[list[str]] = []
        self.deleted: list[tuple[str, dict[str, Any] | None]] = []
        # What a new build does: called with the Build dict, may change its status.
        self.on_build: Callable[[dict[str, Any]], None] = self.complete_build
        self._serial = itertools.count(1)
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    # -- lifecycle ----------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> OpenShiftApiDouble:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def write_kubeconfig(self, path: Path, token: str | None = None) -> Path:
        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "double",
            "clusters": [{"name": "double", "cluster": {"server": self.url}}],
            "users": [{"name": "u", "user": {"token": token or self.token}}],
            "contexts": [
                {"name": "double", "context": {"cluster": "double", "user": "u", "namespace": self.namespace}}
            ],
        }
        path.write_text(yaml.safe_dump(cfg))
        return path

    # -- validation of what clients send --------------------------------------------
    def validate_k8s(self, obj: dict[str, Any]) -> None:
        try:
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            raise ApiError(422, "Invalid", f"{obj.get('kind')}: {'/'.join(map(str, exc.path))}: {exc.message}") from exc

    def validate_openshift(self, obj: dict[str, Any], definition: str) -> None:
        schema = {"$ref": f"#/definitions/{definition}", "definitions": self.definitions}
        errors = list(jsonschema.Draft4Validator(schema).iter_errors(obj))
        if errors:
            raise ApiError(
                422, "Invalid", "; ".join(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors)
            )

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
        self.validate_openshift(bc, "com.github.openshift.api.build.v1.BuildConfig")
        self.buildconfigs[name] = bc

    def complete_build(self, build: dict[str, Any]) -> None:
        digest = "sha256:" + hashlib.sha256(build["metadata"]["name"].encode()).hexdigest()
        bc = build["metadata"]["labels"]["buildconfig"]
        build["status"] = {
            "phase": "Complete",
            "outputDockerImageReference": (
                f"image-registry.openshift-image-registry.svc:5000/{self.namespace}/{bc}:latest"
            ),
            "output": {"to": {"imageDigest": digest}},
        }

    def job_pods(self, job_name: str) -> list[dict[str, Any]]:
        return [p for p in self.pods.values() if p["metadata"]["labels"].get("job-name") == job_name]

    def add_job_pod(
        self,
        job_name: str,
        phase: str,
        started: float | None = None,
        waiting: str | None = None,
        terminated: str | None = None,
        exit_code: int = 0,
        evicted: bool = False,
        unschedulable: str | None = None,
    ) -> dict[str, Any]:
        """A pod of the Job in the given state, as the kubelet would report it."""
        job = self.jobs[job_name]
        name = f"{job_name}-{next(self._serial):05d}"[-63:]
        labels = dict(job["spec"]["template"]["metadata"].get("labels", {}), **{"job-name": job_name})
        image = job["spec"]["template"]["spec"]["containers"][0]["image"]
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
                    "name": "train",
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
                "creationTimestamp": rfc3339(time.time()),
            },
            "spec": job["spec"]["template"]["spec"],
            "status": status,
        }
        self.pods[name] = pod
        return pod

    def finish_job(self, job_name: str, condition: str, reason: str = "", failed: int = 0) -> None:
        now = rfc3339(time.time())
        status = self.jobs[job_name].setdefault("status", {})
        status["conditions"] = [
            {
                "type": condition,
                "status": "True",
                "reason": reason or condition,
                "message": "",
                "lastTransitionTime": now,
            }
        ]
        if condition == "Complete":
            status["completionTime"] = now
            status["succeeded"] = 1
        status["failed"] = failed

    # -- HTTP -----------------------------------------------------------------------
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        double = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, code: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _dispatch(self, method: str) -> None:
                parsed = urlparse(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                with double._lock:
                    double.requests.append((method, parsed.path, body))
                try:
                    if self.headers.get("Authorization") != f"Bearer {double.token}":
                        raise ApiError(401, "Unauthorized", "Unauthorized")
                    if self.headers.get("Upgrade", "").lower() == "websocket":
                        return double._exec(self, parsed)
                    with double._lock:
                        code, out = double.route(method, parsed.path, parse_qs(parsed.query), body)
                    self._send(code, out)
                except ApiError as exc:
                    self._send(
                        exc.code,
                        {
                            "kind": "Status",
                            "apiVersion": "v1",
                            "status": "Failure",
                            "reason": exc.reason,
                            "message": exc.message,
                            "code": exc.code,
                        },
                    )

            def do_GET(self) -> None:
                self._dispatch("GET")

            def do_POST(self) -> None:
                self._dispatch("POST")

            def do_DELETE(self) -> None:
                self._dispatch("DELETE")

        return Handler

    def route(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[int, dict[str, Any]]:
        parts = [p for p in path.split("/") if p]
        if path == "/version":
            return 200, {"major": "1", "minor": "33", "gitVersion": "v1.33.0", "platform": "linux/amd64"}
        if path == "/api":
            return 200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
        if path == "/apis":
            groups = [
                {
                    "name": gv.split("/")[0],
                    "versions": [{"groupVersion": gv, "version": "v1"}],
                    "preferredVersion": {"groupVersion": gv, "version": "v1"},
                }
                for gv in GROUPS
                if "/" in gv
            ]
            return 200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
        if parts[0] == "api" and len(parts) == 2 or parts[0] == "apis" and len(parts) == 3:
            gv = "/".join(parts[1:])
            if gv not in GROUPS:
                raise ApiError(404, "NotFound", f"no group version {gv}")
            return 200, {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": GROUPS[gv]}
        # /api/v1/namespaces/NS/RES[/NAME[/SUB]] or /apis/G/V/namespaces/NS/RES[/NAME[/SUB]]
        rest = parts[2:] if parts[0] == "api" else parts[3:]
        if len(rest) < 3 or rest[0] != "namespaces" or rest[1] != self.namespace:
            raise ApiError(404, "NotFound", f"no such path {path}")
        resource, name, sub = rest[2], (rest[3] if len(rest) > 3 else None), (rest[4] if len(rest) > 4 else None)
        verb = {"POST": "create", "DELETE": "delete"}.get(method, "get" if len(rest) > 3 else "list")
        if resource in self.forbidden:
            raise ApiError(
                403,
                "Forbidden",
                f'{resource} is forbidden: User "dev" cannot {verb} '
                f'resource "{resource}" in the namespace "{self.namespace}"',
            )
        store = {"buildconfigs": self.buildconfigs, "builds": self.builds, "jobs": self.jobs, "pods": self.pods}[
            resource
        ]
        selector = (query.get("labelSelector") or [None])[0]
        if method == "GET" and name is None:
            items = [o for o in store.values() if _matches(o, selector)]
            return 200, {"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items}
        if method == "GET":
            if name not in store:
                raise ApiError(404, "NotFound", f'{resource} "{name}" not found')
            return 200, store[name]
        if method == "DELETE":
            if name not in store:
                raise ApiError(404, "NotFound", f'{resource} "{name}" not found')
            self.deleted.append((f"{resource}/{name}", body))
            obj = store.pop(name)
            if resource == "jobs":
                for pod in self.job_pods(name):
                    self.pods.pop(pod["metadata"]["name"], None)
            return 200, obj
        if method == "POST" and resource == "buildconfigs" and sub == "instantiate":
            return self._instantiate(name, body)
        if method == "POST" and resource in ("jobs", "pods") and name is None:
            self.validate_k8s(body)
            obj_name = body["metadata"]["name"]
            if obj_name in store:
                raise ApiError(409, "AlreadyExists", f'{resource} "{obj_name}" already exists')
            obj = json.loads(json.dumps(body))
            obj["metadata"].update(
                namespace=self.namespace, uid=f"uid-{next(self._serial)}", creationTimestamp=rfc3339(time.time())
            )
            obj["status"] = {"phase": "Running"} if resource == "pods" else {}
            store[obj_name] = obj
            return 201, obj
        raise ApiError(405, "MethodNotAllowed", f"{method} {path}")

    def _instantiate(self, bc_name: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if bc_name not in self.buildconfigs:
            raise ApiError(404, "NotFound", f'buildconfigs.build.openshift.io "{bc_name}" not found')
        unknown = set(body) - BUILD_REQUEST_FIELDS
        if body.get("kind") != "BuildRequest" or body.get("apiVersion") != "build.openshift.io/v1" or unknown:
            raise ApiError(400, "BadRequest", f"not a BuildRequest (unknown fields: {sorted(unknown)})")
        if body.get("metadata", {}).get("name") != bc_name:
            raise ApiError(400, "BadRequest", "metadata.name must name the BuildConfig")
        self.validate_openshift(body["revision"], "com.github.openshift.api.build.v1.SourceRevision")
        for cause in body.get("triggeredBy", []):
            self.validate_openshift(cause, "com.github.openshift.api.build.v1.BuildTriggerCause")
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
            },
            "status": {"phase": "New"},
        }
        self.on_build(build)
        self.validate_openshift(build, "com.github.openshift.api.build.v1.Build")
        self.builds[name] = build
        return 201, build

    # -- exec over WebSocket -----------------------------------------------------------
    def _exec(self, handler: BaseHTTPRequestHandler, parsed: Any) -> None:
        parts = [p for p in parsed.path.split("/") if p]
        pod = self.pods.get(parts[5]) if len(parts) == 7 and parts[6] == "exec" else None
        if pod is None:
            raise ApiError(404, "NotFound", f"no pod for {parsed.path}")
        command = parse_qs(parsed.query).get("command", [])
        self.exec_commands.append(command)
        key = handler.headers["Sec-WebSocket-Key"]
        accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        handler.send_response(101, "Switching Protocols")
        handler.send_header("Upgrade", "websocket")
        handler.send_header("Connection", "Upgrade")
        handler.send_header("Sec-WebSocket-Accept", accept)
        handler.send_header("Sec-WebSocket-Protocol", "v4.channel.k8s.io")
        handler.end_headers()
        handler.wfile.flush()
        mounts = {m["mountPath"] for m in pod["spec"]["containers"][0].get("volumeMounts", [])}
        # The collector's contract: sh -c SCRIPT collect MOUNT RUN_ID; MOUNT maps to the local volume.
        argv = list(command)
        if len(argv) == 6 and argv[:2] == ["sh", "-c"] and argv[4] in mounts:
            argv[4] = str(self.volume)
            proc = subprocess.run(argv, capture_output=True)
            out, err, code = proc.stdout, proc.stderr, proc.returncode
        else:
            out, err, code = b"", f"double: unsupported exec {command!r}\n".encode(), 126
        sock = handler.connection
        for i in range(0, len(out), 65536):
            _ws_send(sock, b"\x01" + out[i : i + 65536])
        if err:
            _ws_send(sock, b"\x02" + err)
        status = (
            {"status": "Success"}
            if code == 0
            else {
                "status": "Failure",
                "reason": "NonZeroExitCode",
                "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
            }
        )
        _ws_send(sock, b"\x03" + json.dumps(status).encode())
        _ws_send(sock, struct.pack("!H", 1000), opcode=0x8)
        handler.close_connection = True
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _ws_send(sock: socket.socket, payload: bytes, opcode: int = 0x2) -> None:
    """One unmasked server-to-client WebSocket frame (RFC 6455)."""
    n = len(payload)
    if n < 126:
        header = struct.pack("!BB", 0x80 | opcode, n)
    elif n < 65536:
        header = struct.pack("!BBH", 0x80 | opcode, 126, n)
    else:
        header = struct.pack("!BBQ", 0x80 | opcode, 127, n)
    sock.sendall(header + payload)
