"""Put the training data file where an environment's jobs read it, verified by sha256.

Why: "identical jobs" covers the data too. `bench stage-data --env ENV` copies the
ImageNet-128 HDF5 that `prepare-data` wrote onto the environment's data volume (OpenShift:
a Job running `python -m bench.stage_data fetch ...` in the training image) or checks that
the pre-staged copy is there (Slurm), and in both cases compares its sha256 with the one
env.yaml names. This module is the fetch itself, standard library only, so it runs in the
image unchanged:

- idempotent: a file already there with the right sha256 is left alone (its sidecar
  `<file>.sha256`, written after a verified copy, saves re-reading it when size and time match);
- safe: the new copy goes to a temporary file beside the target, is hashed while written,
  and replaces the target only when the sha256 matches; a wrong checksum fails with one
  line and leaves the old file as it was;
- sources: `https://` (an optional `Authorization` header from ATLAS_SOURCE_AUTHORIZATION),
  `s3://bucket/key` on any S3-compatible store (AWS Signature V4 from AWS_ACCESS_KEY_ID,
  AWS_SECRET_ACCESS_KEY, AWS_REGION and ATLAS_S3_ENDPOINT, all from a Secret), or a local
  path (another PVC mounted into the Job).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import hmac
import os
import sys
import tempfile
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

CHUNK = 1 << 20
EXIT_MISMATCH = 3


class StageError(Exception):
    """One line for the user: what failed and what to do."""


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def current_sha256(path: Path) -> str | None:
    """The sha256 of `path` (from a sidecar at least as new as the file, else by reading it)."""
    if not path.is_file():
        return None
    side = sidecar(path)
    if side.is_file() and side.stat().st_mtime >= path.stat().st_mtime:
        words = side.read_text().split()
        if len(words) >= 3 and words[2] == str(path.stat().st_size):
            return words[0]
    return sha256_file(path)


def write_sidecar(path: Path, sha: str) -> None:
    """`<sha>  <name> <size>`: sha256sum's format plus the size the sidecar vouches for."""
    sidecar(path).write_text(f"{sha}  {path.name} {path.stat().st_size}\n")


@dataclass(frozen=True)
class DataSpec:
    """env.yaml's `data:` (with command-line overrides): which file, its sha256, where from."""

    file: str
    sha256: str
    source: str | None = None  # https://..., s3://bucket/key, pvc:CLAIM/path (OpenShift)
    s3_endpoint: str | None = None
    credentials_secret: str | None = None  # Secret whose keys become the fetch's environment
    pvc: str = "atlas-data"
    mount: str = "/data"


DATA_KEYS = ("file", "sha256", "source", "s3_endpoint", "credentials_secret", "pvc", "mount")


def check_data(settings: dict[str, Any], where: str) -> list[str]:
    """Problems of the values in env.yaml's `data:` section (absent is fine); which keys
    may appear is bench.envschema's allow-list."""
    data = settings.get("data")
    if data is None:
        return []
    if not isinstance(data, dict):
        return [f"{where}: data must be a mapping ({', '.join(DATA_KEYS)})"]
    errors = []  # unknown keys: the kind's schema (bench.envschema) names them
    for key in DATA_KEYS:
        if data.get(key) is not None and not isinstance(data[key], str):
            errors.append(f"{where}: data.{key} must be a string or null, got {data[key]!r}")
    sha = data.get("sha256")
    if isinstance(sha, str) and (len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha.lower())):
        errors.append(f"{where}: data.sha256 must be 64 hex digits (`sha256sum FILE`), got {sha!r}")
    return errors


def data_spec(settings: dict[str, Any], env: str, **overrides: str | None) -> DataSpec:
    """The staging request for `env`, or StageError naming the missing setting."""
    data = dict(settings.get("data") or {})
    data.update({k: v for k, v in overrides.items() if v})
    for key in ("file", "sha256"):
        if not data.get(key):
            raise StageError(
                f"{env}: data.{key} is not set: put it under `data:` in clusters/{env}/env.yaml or pass --{key}"
            )
    return DataSpec(**{k: data[k] for k in DATA_KEYS if data.get(k)})


def data_record(path: str | None) -> dict[str, Any]:
    """run.json's `data`: the training file and its sha256, from the sidecar stage-data wrote."""
    if not path:
        return {"path": None, "sha256": None, "note": "synthetic data (no data file)"}
    file = Path(path)
    side = sidecar(file)
    if file.is_file() and side.is_file() and side.stat().st_mtime >= file.stat().st_mtime:
        return {"path": path, "sha256": side.read_text().split()[0], "note": "from the sidecar bench stage-data wrote"}
    if file.is_file() and file.stat().st_size <= 1 << 30:
        return {"path": path, "sha256": sha256_file(file), "note": "hashed after the run"}
    return {"path": path, "sha256": None, "note": "no verified sidecar: stage it with `bench stage-data`"}


# -- sources ---------------------------------------------------------------------------
def sigv4_headers(
    method: str, url: str, region: str, access_key: str, secret_key: str, now: datetime.datetime,
    extra: dict[str, str] | None = None, payload_sha256: str = "UNSIGNED-PAYLOAD",
) -> dict[str, str]:  # fmt: skip
    """Headers that sign a request with AWS Signature Version 4 (service s3)."""
    parts = urllib.parse.urlsplit(url)
    stamp, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    headers = {"host": parts.netloc, "x-amz-content-sha256": payload_sha256, "x-amz-date": stamp}
    headers.update({k.lower(): v.strip() for k, v in (extra or {}).items()})
    names = sorted(headers)
    canonical = "\n".join([
        method, urllib.parse.quote(parts.path or "/", safe="/-_.~"), parts.query,
        "".join(f"{n}:{headers[n]}\n" for n in names), ";".join(names), payload_sha256,
    ])  # fmt: skip
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = f"AWS4{secret_key}".encode()
    for part in (day, region, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, SignedHeaders={';'.join(names)}, Signature={signature}"
    )
    return headers


def open_source(source: str, environ: dict[str, str] | None = None) -> IO[bytes]:
    """A readable stream of the source file."""
    env = os.environ if environ is None else environ
    if source.startswith(("https://", "http://")):
        headers = {"Authorization": env["ATLAS_SOURCE_AUTHORIZATION"]} if env.get("ATLAS_SOURCE_AUTHORIZATION") else {}
        return urllib.request.urlopen(urllib.request.Request(source, headers=headers), timeout=60)
    if source.startswith("s3://"):
        missing = [k for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "ATLAS_S3_ENDPOINT") if not env.get(k)]
        if missing:
            raise StageError(f"an s3:// source needs {', '.join(missing)} (from the credentials Secret / s3_endpoint)")
        bucket_key = source[len("s3://") :]
        url = f"{env['ATLAS_S3_ENDPOINT'].rstrip('/')}/{bucket_key}"  # path-style: every S3-compatible store has it
        now = datetime.datetime.now(datetime.timezone.utc)
        headers = sigv4_headers(
            "GET", url, env.get("AWS_REGION", "us-east-1"), env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], now
        )
        headers.pop("host")
        return urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=60)
    path = Path(source)
    if not path.is_file():
        raise StageError(f"source {source} is not a file (https://..., s3://bucket/key or a mounted path)")
    return open(path, "rb")


# -- the fetch -------------------------------------------------------------------------
def stage(source: str, dest: Path, expected: str, environ: dict[str, str] | None = None) -> str:
    """Copy `source` to `dest` unless it is there already; verify sha256. Returns what happened."""
    expected = expected.lower()
    if len(expected) != 64 or any(c not in "0123456789abcdef" for c in expected):
        raise StageError(f"the expected sha256 must be 64 hex digits, got {expected!r}")
    if current_sha256(dest) == expected:
        if not sidecar(dest).is_file():
            write_sidecar(dest, expected)
        return f"already staged: {dest} (sha256 {expected[:12]})"
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # e.g. --dest under a file
        raise StageError(
            f"cannot make the folder {dest.parent} for --dest ({exc.strerror}): give a --dest under a folder"
        ) from None
    digest = hashlib.sha256()
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".partial", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as out, open_source(source, environ) as src:
            for block in iter(lambda: src.read(CHUNK), b""):
                digest.update(block)
                out.write(block)
            out.flush()
            os.fsync(out.fileno())
        got = digest.hexdigest()
        if got != expected:
            what = "the existing file is untouched" if dest.exists() else "nothing was written"
            raise StageError(
                f"checksum mismatch for {source}: expected sha256 {expected[:12]}…, got {got[:12]}…; {what}. "
                "Fix the source or data.sha256 in env.yaml (the sha256sum of the file prepare-data wrote)"
            )
        os.replace(tmp, dest)
        write_sidecar(dest, got)
        return f"staged: {dest} (sha256 {got[:12]})"
    except OSError as exc:
        raise StageError(f"copying {source} to {dest} failed: {exc}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        allow_abbrev=False, prog="python -m bench.stage_data", description=__doc__.split("\n\n")[0]
    )
    sub = parser.add_subparsers(dest="action", required=True)
    fetch = sub.add_parser("fetch", allow_abbrev=False, help="copy SOURCE to DEST unless there already; verify sha256")
    fetch.add_argument("--source", required=True)
    fetch.add_argument("--dest", required=True, type=Path)
    fetch.add_argument("--sha256", required=True)
    check = sub.add_parser("check", allow_abbrev=False, help="does DEST exist with this sha256?")
    check.add_argument("--dest", required=True, type=Path)
    check.add_argument("--sha256", required=True)
    args = parser.parse_args(argv)
    try:
        if args.action == "check":
            got = current_sha256(args.dest)
            if got != args.sha256.lower():
                raise StageError(
                    f"{args.dest}: " + ("missing" if got is None else f"sha256 {got[:12]}… is not {args.sha256[:12]}…")
                )
            print(f"ok: {args.dest} (sha256 {got[:12]})")
            return 0
        print(stage(args.source, args.dest, args.sha256))
        return 0
    except StageError as exc:
        print(f"stage-data: {exc}", file=sys.stderr)
        return EXIT_MISMATCH if "checksum mismatch" in str(exc) else 1


if __name__ == "__main__":
    sys.exit(main())
