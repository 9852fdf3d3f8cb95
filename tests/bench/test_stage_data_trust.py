"""The data fetch trusts no more than it must (issue 24): the credential only to its
origin, https unless allowed, no more bytes than expected, a short body named, the file
on disk hashed again (never "already staged" on a sidecar's word), paths kept inside their
mounts, and no `.partial` left by a failed or killed fetch.

Real loopback servers on 127.0.0.1 with OS-chosen ports: an HTTPS one whose certificate
a CA made for the test vouches for (SSL_CERT_FILE points the client at it), and a plain
HTTP one.
"""

from __future__ import annotations

import hashlib
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from bench.stage_data import StageError, check_data, data_spec, stage
from bench.targets import target_class
from tests.doubles.apiserver.tls import make_ca

DATA = os.urandom(256 * 1024 + 3)
SHA = hashlib.sha256(DATA).hexdigest()
REPO = Path(__file__).resolve().parents[2]


class Server:
    """Routes: path -> (status, headers, body, mode); mode 'short' sends half the body it
    announces and closes, 'stall' sends a little and waits until `release` is set, 'hold'
    sends a little, waits until `release` is set, then sends the rest."""

    def __init__(self, context: ssl.SSLContext | None = None) -> None:
        self.routes: dict[str, tuple[int, dict[str, str], bytes, str]] = {}
        self.seen: list[tuple[str, dict[str, str]]] = []
        self.release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                outer.seen.append((self.path, dict(self.headers)))
                status, headers, body, mode = outer.routes.get(self.path, (404, {}, b"", ""))
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                if mode == "short":
                    self.wfile.write(body[: len(body) // 2])
                elif mode in ("stall", "hold"):
                    self.wfile.write(body[:1000])
                    self.wfile.flush()
                    outer.release.wait(60)
                    if mode == "hold":
                        self.wfile.write(body[1000:])
                else:
                    self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.handle_error = lambda *_: None  # a client that stops reading (the size cap) is expected
        if context is not None:
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        scheme = "https" if context is not None else "http"
        self.url = f"{scheme}://127.0.0.1:{self.httpd.server_address[1]}"

    def file(self, path: str, body: bytes = DATA, mode: str = "", length: bool = True) -> None:
        self.routes[path] = (200, {"Content-Length": str(len(body))} if length else {}, body, mode)

    def redirect(self, path: str, to: str) -> None:
        self.routes[path] = (302, {"Location": to, "Content-Length": "0"}, b"", "")

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Server, Server, Server]]:
    """(https origin A, https origin B, plain http C); the client trusts the test CA."""
    ca = make_ca()
    (tmp_path / "ca.pem").write_bytes(ca.ca_pem)
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))
    made = [Server(ca.server_context(tmp_path)), Server(ca.server_context(tmp_path)), Server()]
    try:
        yield made[0], made[1], made[2]
    finally:
        for server in made:
            server.close()


AUTH = {"ATLAS_SOURCE_AUTHORIZATION": "Bearer the-secret"}


def left(dest: Path) -> list[str]:
    return sorted(p.name for p in dest.parent.iterdir()) if dest.parent.exists() else []


def test_the_credential_goes_only_to_its_origin(tmp_path: Path, servers) -> None:
    a, b, _ = servers
    b.file("/data.hdf5")
    a.file("/same.hdf5")
    a.redirect("/moved", f"{b.url}/data.hdf5")
    a.redirect("/here", f"{a.url}/same.hdf5")
    assert stage(f"{a.url}/moved", tmp_path / "x" / "d.hdf5", SHA, AUTH).startswith("staged")
    assert a.seen[-1][1].get("Authorization") == "Bearer the-secret"
    assert b.seen and "Authorization" not in b.seen[-1][1]  # another port is another origin
    assert stage(f"{a.url}/here", tmp_path / "y" / "d.hdf5", SHA, AUTH).startswith("staged")
    assert [h.get("Authorization") for _, h in a.seen[-2:]] == ["Bearer the-secret"] * 2  # same origin: kept


def test_plain_http_only_when_allowed(tmp_path: Path, servers) -> None:
    a, _, c = servers
    c.file("/d.hdf5")
    with pytest.raises(StageError, match="plain http"):
        stage(f"{c.url}/d.hdf5", tmp_path / "d.hdf5", SHA, AUTH)
    assert not c.seen  # nothing was sent, the credential included
    assert stage(f"{c.url}/d.hdf5", tmp_path / "d.hdf5", SHA, {"ATLAS_ALLOW_HTTP": "1"}).startswith("staged")
    a.redirect("/down", f"{c.url}/d.hdf5")
    with pytest.raises(StageError, match="redirect to .* plain http"):
        stage(f"{a.url}/down", tmp_path / "e" / "e.hdf5", SHA, {**AUTH, "ATLAS_ALLOW_HTTP": "1"})  # never https -> http
    assert len(c.seen) == 1
    assert left(tmp_path / "e" / "e.hdf5") == []


def test_no_more_bytes_than_expected(tmp_path: Path, servers) -> None:
    a, _, _ = servers
    big = os.urandom(2 * 1024 * 1024)
    a.file("/big", big)
    a.file("/endless", big, length=False)  # no Content-Length: the cap stops the read
    dest = tmp_path / "d" / "f.hdf5"
    with pytest.raises(StageError, match="announces 2097152 bytes, data.size says"):
        stage(f"{a.url}/big", dest, SHA, {}, size=len(DATA))
    with pytest.raises(StageError, match="sent more than 262147 bytes"):
        stage(f"{a.url}/endless", dest, SHA, {}, size=len(DATA))
    with pytest.raises(StageError, match="over the cap of 1000"):
        stage(f"{a.url}/big", dest, SHA, {"ATLAS_STAGE_MAX_BYTES": "1000"})
    assert left(dest) == []  # no partial file


def test_a_short_body_is_named_as_such(tmp_path: Path, servers) -> None:
    a, _, _ = servers
    a.file("/cut", mode="short")
    dest = tmp_path / "d" / "f.hdf5"
    with pytest.raises(StageError, match="short body") as caught:
        stage(f"{a.url}/cut", dest, SHA, {})
    assert "checksum mismatch" not in str(caught.value)
    assert left(dest) == []


def test_the_file_on_disk_is_hashed_again(tmp_path: Path, servers) -> None:
    """A file rewritten in place with the same size and an old time: its sidecar still
    says the right sha256, but the bytes are wrong: fetched again, not 'already staged'."""
    a, _, _ = servers
    a.file("/d.hdf5")
    dest = tmp_path / "d" / "f.hdf5"
    assert stage(f"{a.url}/d.hdf5", dest, SHA, {}).startswith("staged")
    then = dest.stat().st_mtime_ns
    dest.write_bytes(bytes(len(DATA)))
    os.utime(dest, ns=(then, then))
    assert stage(f"{a.url}/d.hdf5", dest, SHA, {}).startswith("staged:")
    assert dest.read_bytes() == DATA
    assert stage(f"{a.url}/d.hdf5", dest, SHA, {}).startswith("already staged:")


@pytest.mark.parametrize(
    "data, needle",
    [
        ({"file": "../../etc/shadow"}, "data.file must be inside data.mount"),
        ({"file": "/etc/shadow"}, "data.file must be inside data.mount"),
        ({"file": "f", "source": "pvc:claim/../../etc/shadow"}, "data.source pvc:CLAIM/path"),
        ({"file": "f", "source": "pvc:../x/f"}, "data.source pvc:CLAIM/path"),
        ({"file": "f", "mount": "/data/../etc"}, "data.mount must be an absolute path"),
        ({"file": "f", "size": -1}, "data.size must be"),
    ],
)
def test_paths_stay_inside_their_mounts(data: dict, needle: str) -> None:
    settings = {"kind": "openshift", "data": {"sha256": SHA, **data}}
    on_volume = target_class("openshift").data_on_volume  # the kind says where its data lives
    assert any(needle in p for p in check_data(settings, "env.yaml", on_volume=on_volume))
    with pytest.raises(StageError, match=needle.split(" must")[0]):
        data_spec(settings, "moc", on_volume=on_volume)


def test_slurm_may_name_an_absolute_prestaged_file_but_never_dotdot() -> None:
    on_volume = target_class("slurm").data_on_volume
    assert not check_data({"data": {"file": "/scratch/imagenet.hdf5", "sha256": SHA}}, "e", on_volume=on_volume)
    assert check_data({"data": {"file": "/scratch/../etc/shadow", "sha256": SHA}}, "e", on_volume=on_volume)


def test_the_destination_stays_inside_its_root(tmp_path: Path) -> None:
    with pytest.raises(StageError, match="outside"):
        stage("unused", tmp_path / "data" / ".." / "escape.hdf5", SHA, {}, root=tmp_path / "data")


def _fetch_command(url: str, dest: Path) -> list[str]:
    return [sys.executable, "-m", "bench.stage_data", "fetch", "--source", url, "--dest", str(dest), "--sha256", SHA]


def _partials(dest: Path) -> list[str]:
    return [n for n in left(dest) if n.endswith(".partial")]


def _wait_for_partials(dest: Path, count: int, proc: subprocess.Popen, before: tuple[str, ...] = ()) -> None:
    """Until `count` partials not in `before` exist (the fetches have begun to write)."""
    end = time.monotonic() + 60
    while time.monotonic() < end and len(set(_partials(dest)) - set(before)) < count and proc.poll() is None:
        time.sleep(0.05)
    assert len(set(_partials(dest)) - set(before)) >= count, (left(dest), proc.poll())


def test_a_killed_fetch_leaves_no_partial(tmp_path: Path, servers) -> None:
    """SIGTERM (a deleted Job) removes the .partial at once; those left by SIGKILL are
    removed by the next fetch of the same file at once (their owner's lock is gone), an
    `already staged` one too."""
    a, _, _ = servers
    a.file("/slow", mode="stall")
    dest = tmp_path / "data" / "f.hdf5"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for sig in (signal.SIGTERM, signal.SIGKILL, signal.SIGKILL):
        before = tuple(_partials(dest))
        proc = subprocess.Popen(_fetch_command(f"{a.url}/slow", dest), cwd=REPO, env=env, stderr=subprocess.PIPE)
        try:
            _wait_for_partials(dest, 1, proc, before)
            assert not set(before) & set(_partials(dest))  # it swept the killed fetch's partial at once
            proc.send_signal(sig)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if sig == signal.SIGTERM:
            assert left(dest) == [] and proc.returncode != 0
    assert len(_partials(dest)) >= 1  # what the kills left (the second fetch swept the first's)
    a.file("/good")
    assert stage(f"{a.url}/good", dest, SHA, {}).startswith("staged")
    assert left(dest) == ["f.hdf5", "f.hdf5.sha256"]
    # a partial a killed fetch (of another version of the file) left beside the staged one
    # goes with the next `already staged`
    other = _fetch_command(f"{a.url}/slow", dest)
    other[-1] = "0" * 64
    proc = subprocess.Popen(other, cwd=REPO, env=env, stderr=subprocess.PIPE)
    try:
        _wait_for_partials(dest, 1, proc)
        proc.kill()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert stage(f"{a.url}/good", dest, SHA, {}).startswith("already staged")
    assert left(dest) == ["f.hdf5", "f.hdf5.sha256"]


def test_two_fetches_of_one_file_at_once_both_succeed(tmp_path: Path, servers) -> None:
    """Each fetch owns its partial: neither removes the other's while it is written, both
    end `staged` with the same verified file, and no partial is left."""
    a, _, _ = servers
    a.file("/held", mode="hold")
    dest = tmp_path / "data" / "f.hdf5"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen(
            _fetch_command(f"{a.url}/held", dest), cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(2)
    ]
    try:
        _wait_for_partials(dest, 2, procs[0])  # both are writing: neither swept the other's partial
        time.sleep(0.3)
        assert len(_partials(dest)) == 2
        a.release.set()
        outs = [p.communicate(timeout=60) for p in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert [p.returncode for p in procs] == [0, 0], outs
    assert all(out.decode().startswith("staged: ") for out, _ in outs), outs
    assert hashlib.sha256(dest.read_bytes()).hexdigest() == SHA
    assert left(dest) == ["f.hdf5", "f.hdf5.sha256"]
