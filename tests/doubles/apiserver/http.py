"""The API double's HTTP side: one request handler, chunked bodies both ways, exec over WebSocket.

Kept apart from the double's state (server.py) so each stays readable. Request bodies may
come with a Content-Length or chunked (RFC 9112 section 7.1, as `kubectl create --raw -f`
sends them). Every error, expected or not, goes back as a Kubernetes `Status` object with
its HTTP code: a client must never see a dropped connection where a real server would
answer. Watches of `kubectl get -w` (Accept ...as=Table) stream one-row Tables.
"""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import struct
import subprocess
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlparse

from tests.doubles.apiserver.errors import ApiError, RawResponse, TextResponse
from tests.doubles.apiserver.tables import table
from tests.doubles.apiserver.watchlist import list_options
from tests.doubles.apiserver.webhooks import webhook_path

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # TCP_NODELAY, as Go's net package sets on every TCP connection of the real API server
    # (https://pkg.go.dev/net#TCPConn.SetNoDelay): without it each response's body waits
    # ~40 ms behind the headers (Nagle's algorithm meeting the client's delayed ACK).
    disable_nagle_algorithm = True

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    @property
    def double(self) -> Any:
        return self.server.double  # type: ignore[attr-defined]

    def _send(self, code: int, body: Any, content_type: str = "application/json", warnings: list[str] = ()) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for text in warnings:
            self.send_header("Warning", f'299 - "{text}"')
        self.end_headers()
        self.wfile.write(data)

    def _raw_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self.double.chunked_bodies += 1
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _dispatch(self, method: str) -> None:
        parsed = urlparse(self.path)
        query = parse_qs(parsed.query)
        try:
            raw = self._raw_body()
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode(errors="replace")
            with self.double.changed:
                self.double.requests.append((method, parsed.path, body))
            hook = webhook_path(parsed.path)
            if hook is not None:  # reachable without a token where RBAC allows (webhooks.py)
                return self._webhook(method, hook, raw)
            if self.headers.get("Authorization") != f"Bearer {self.double.token}":
                raise ApiError(401, "Unauthorized", "Unauthorized")
            if self.headers.get("Upgrade", "").lower() == "websocket":
                return self._exec(parsed.path, query)
            if method == "GET" and (query.get("watch") or [""])[0] in ("true", "1"):
                return self._watch(parsed.path, query)
            with self.double.changed:
                before = len(self.double.warnings)
                code, out = self.double.route(method, parsed.path, query, raw, self.headers)
                warnings = self.double.warnings[before:]
            self._send(code, out, warnings=warnings)
        except TextResponse as text:
            data = text.text.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except ApiError as exc:
            self._send(exc.code, exc.status())
        except RawResponse as exc:
            self._send(200, exc.data, exc.content_type)
        except Exception as exc:  # a bug in the double: say so, never drop the connection
            self._send(500, ApiError(500, "InternalError", f"double: {type(exc).__name__}: {exc}").status())

    def _webhook(self, method: str, hook: tuple[str, str, str, str], raw: bytes) -> None:
        namespace, name, secret, kind = hook
        if method != "POST":
            raise ApiError(405, "MethodNotAllowed", f"{method} is not supported on buildconfigs/webhooks")
        with self.double.changed:
            auth = self.headers.get("Authorization", "")
            code, out = self.double.webhook(namespace, name, secret, kind, self.headers, raw, auth)
        self._send(code, out)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    # -- watch: a chunked stream of JSON lines --------------------------------------------
    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _watch(self, path: str, query: dict[str, list[str]]) -> None:
        r, name, _ = self.double.parse(path)
        if r.plural in self.double.forbidden:
            raise ApiError(403, "Forbidden", f'{r.plural} is forbidden: User "dev" cannot watch resource "{r.plural}"')
        mode = list_options(query, watch=True)
        matches = self.double.selectors(r, query)
        timeout = min(float((query.get("timeoutSeconds") or ["30"])[0]), 30.0)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        # The double ends the connection with the stream (a client that stopped reading early
        # leaves it mid-chunk): said in the response, so no client sends its next request on it.
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            as_table = "as=Table" in self.headers.get("Accept", "")
            since = (query.get("resourceVersion") or [None])[0]
            for kind, obj in self.double.watch_events(r, since, matches, timeout, mode):
                if name and kind not in ("ERROR", "BOOKMARK") and obj["metadata"]["name"] != name:
                    continue
                if as_table and kind != "ERROR":  # a bookmark becomes a Table without rows
                    rows = [] if kind == "BOOKMARK" else [obj]
                    obj = table(r, rows, self.double.clock.now(), obj["metadata"]["resourceVersion"])
                self._chunk(json.dumps({"type": kind, "object": obj}).encode() + b"\n")
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass  # the client went away
        self.close_connection = True

    # -- exec over WebSocket -------------------------------------------------------------
    def _exec(self, path: str, query: dict[str, list[str]]) -> None:
        r, name, sub = self.double.parse(path)
        pod = self.double.pods.get(name) if r.plural == "pods" and sub == "exec" else None
        if pod is None:
            raise ApiError(404, "NotFound", f"no pod for {path}")
        command = query.get("command", [])
        self.double.exec_commands.append(command)
        accept = base64.b64encode(
            hashlib.sha1((self.headers["Sec-WebSocket-Key"] + WS_GUID).encode()).digest()
        ).decode()
        self.send_response(101, "Switching Protocols")
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.send_header("Sec-WebSocket-Protocol", "v4.channel.k8s.io")
        self.end_headers()
        self.wfile.flush()
        mounts = {m["mountPath"] for m in pod["spec"]["containers"][0].get("volumeMounts", [])}
        # The collector's contract: sh -c SCRIPT collect MOUNT RUN_ID; MOUNT maps to the local volume.
        argv = list(command)
        kubelet = getattr(self.double, "kubelet", None)
        if kubelet is not None:  # a kubelet runs the pod here: the command runs in its folders
            proc = subprocess.run(kubelet.map_argv(pod, argv), capture_output=True)
            out, err, code = proc.stdout, proc.stderr, proc.returncode
        elif len(argv) == 6 and argv[:2] == ["sh", "-c"] and argv[4] in mounts:
            argv[4] = str(self.double.volume)
            proc = subprocess.run(argv, capture_output=True)
            out, err, code = proc.stdout, proc.stderr, proc.returncode
        else:
            out, err, code = b"", f"double: unsupported exec {command!r}\n".encode(), 126
        sock = self.connection
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
        self.close_connection = True
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
