"""The data fetch that `bench stage-data` runs: idempotent, checksum-verified, never half-replaced."""

from __future__ import annotations

import datetime
import hashlib
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from bench.stage_data import EXIT_MISMATCH, StageError, main, sigv4_headers, stage

DATA = os.urandom(3 * 1024 * 1024 + 17)
SHA = hashlib.sha256(DATA).hexdigest()


def test_stage_from_a_path_is_idempotent(tmp_path: Path) -> None:
    src = tmp_path / "other-pvc" / "imagenet128.hdf5"
    src.parent.mkdir()
    src.write_bytes(DATA)
    dest = tmp_path / "data" / "imagenet128.hdf5"
    assert stage(str(src), dest, SHA).startswith("staged:")
    assert dest.read_bytes() == DATA and (tmp_path / "data" / "imagenet128.hdf5.sha256").read_text().startswith(SHA)
    before = dest.stat().st_mtime_ns
    src.unlink()  # a second stage does not even need the source
    assert stage(str(src), dest, SHA).startswith("already staged:")
    assert dest.stat().st_mtime_ns == before
    assert sorted(p.name for p in dest.parent.iterdir()) == ["imagenet128.hdf5", "imagenet128.hdf5.sha256"]


def test_a_wrong_checksum_fails_clearly_and_keeps_the_old_file(tmp_path: Path, capsys) -> None:
    old = b"the previous, verified data"
    dest = tmp_path / "data" / "imagenet128.hdf5"
    dest.parent.mkdir()
    dest.write_bytes(old)
    src = tmp_path / "new.hdf5"
    src.write_bytes(DATA)
    wrong = hashlib.sha256(b"something else").hexdigest()
    code = main(["fetch", "--source", str(src), "--dest", str(dest), "--sha256", wrong])
    err = capsys.readouterr().err
    assert code == EXIT_MISMATCH
    assert err.count("\n") == 1 and "checksum mismatch" in err and "the existing file is untouched" in err
    assert dest.read_bytes() == old
    assert [p.name for p in dest.parent.iterdir()] == ["imagenet128.hdf5"]  # no partial file left
    with pytest.raises(StageError, match="64 hex digits"):
        stage(str(src), dest, "abc")


def test_check_mode_compares_the_prestaged_file(tmp_path: Path, capsys) -> None:
    dest = tmp_path / "imagenet128.hdf5"
    assert main(["check", "--dest", str(dest), "--sha256", SHA]) == 1
    assert "missing" in capsys.readouterr().err
    dest.write_bytes(DATA)
    assert main(["check", "--dest", str(dest), "--sha256", SHA]) == 0
    dest.write_bytes(DATA[:-1])
    assert main(["check", "--dest", str(dest), "--sha256", SHA]) == 1


class _Server:
    """A loopback HTTP server standing in for an HTTPS or S3-compatible endpoint."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, str]]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                outer.seen.append((self.path, dict(self.headers)))
                self.send_response(200)
                self.send_header("Content-Length", str(len(DATA)))
                self.end_headers()
                self.wfile.write(DATA)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"


def test_url_and_s3_sources(tmp_path: Path) -> None:
    server = _Server()
    try:
        env = {"ATLAS_SOURCE_AUTHORIZATION": "Bearer abc", "ATLAS_ALLOW_HTTP": "1"}  # a loopback http server
        assert stage(f"{server.url}/imagenet128.hdf5", tmp_path / "a.hdf5", SHA, env).startswith("staged")
        assert server.seen[-1][1]["Authorization"] == "Bearer abc"
        s3 = {"AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "secret", "ATLAS_S3_ENDPOINT": server.url}
        s3["ATLAS_ALLOW_HTTP"] = "1"
        assert stage("s3://atlas-data/imagenet128.hdf5", tmp_path / "b.hdf5", SHA, s3).startswith("staged")
        path, headers = server.seen[-1]
        assert path == "/atlas-data/imagenet128.hdf5"  # path-style addressing
        assert headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKID/")
        with pytest.raises(StageError, match="needs AWS_ACCESS_KEY_ID"):
            stage("s3://atlas-data/x", tmp_path / "c.hdf5", SHA, {})
    finally:
        server.httpd.shutdown()


def test_signature_v4_matches_the_aws_documented_example() -> None:
    """AWS's worked example 'GET Object' (Signature Version 4, header-based auth, S3 API reference)."""
    headers = sigv4_headers(
        "GET", "https://examplebucket.s3.amazonaws.com/test.txt", "us-east-1", "AKIAIOSFODNN7EXAMPLE",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", datetime.datetime(2013, 5, 24, tzinfo=datetime.timezone.utc),
        extra={"Range": "bytes=0-9"}, payload_sha256=hashlib.sha256(b"").hexdigest(),
    )  # fmt: skip
    assert headers["authorization"].endswith(
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
    )


def test_run_json_data_section(tmp_path: Path) -> None:
    """What the recorder writes as run.json `data`: the sha256 stage-data verified."""
    from bench.stage_data import data_record

    assert data_record(None)["sha256"] is None and "synthetic" in data_record(None)["note"]
    src = tmp_path / "src.hdf5"
    src.write_bytes(DATA)
    dest = tmp_path / "data" / "imagenet128.hdf5"
    stage(str(src), dest, SHA)
    assert data_record(str(dest)) == {
        "path": str(dest),
        "sha256": SHA,
        "note": "from the sidecar bench stage-data wrote",
    }
    (tmp_path / "data" / "imagenet128.hdf5.sha256").unlink()
    assert data_record(str(dest))["sha256"] == SHA  # small enough to hash after the run
    assert data_record(str(tmp_path / "missing.hdf5"))["sha256"] is None
