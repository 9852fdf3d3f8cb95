"""Put the training data file where an environment's jobs read it, verified by sha256.

Why: "identical jobs" covers the data too. `bench stage-data --env ENV` copies the
ImageNet-128 HDF5 that `prepare-data` wrote onto the environment's data volume (OpenShift:
a Job running `python -m bench.stage_data fetch ...` in the training image) or checks that
the pre-staged copy is there (Slurm), and in both cases compares its sha256 with the one
env.yaml names. This module is the fetch itself, standard library only, so it runs in the
image unchanged:

- idempotent: a file already there with the right sha256 (hashed again: its sidecar
  `<file>.sha256` is never taken on trust here) is left alone;
- safe: the new copy goes to a temporary file beside the target, is hashed while written,
  and replaces the target only when the sha256 matches; a wrong checksum fails with one
  line and leaves the old file as it was;
- bounded: https only unless `--allow-http`, the credential only to its origin, at most
  data.size (or ATLAS_STAGE_MAX_BYTES) bytes, a short body named as such (bench.stage_http);
  a fetch holds a lock (flock) on its `.partial` while it writes; every fetch, an `already
  staged` one too, removes at once each `.partial` of that file whose owner is gone (a
  killed fetch), and never one a live fetch is writing;
- confined: data.file and a pvc: source path stay inside their mount (no `..`, no absolute
  path on a volume);
- sources: `https://` (an optional `Authorization` header from ATLAS_SOURCE_AUTHORIZATION),
  `s3://bucket/key` on any S3-compatible store (AWS Signature V4 from AWS_ACCESS_KEY_ID,
  AWS_SECRET_ACCESS_KEY, AWS_REGION and ATLAS_S3_ENDPOINT, all from a Secret), or a local
  path (another PVC mounted into the Job).
"""

from __future__ import annotations

import argparse
import datetime
import fcntl
import hashlib
import hmac
import http.client
import os
import re
import signal
import sys
import tempfile
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from bench.stage_http import FetchRefused, announced_length, check_length, max_bytes, open_url, redacted

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
    """The sha256 of `path`, read from its bytes: a sidecar (even with the right size and
    time) may describe another file written in place, so "already staged" is never its word."""
    if not path.is_file():
        return None
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
    size: int | None = None  # bytes: the most a fetch reads, and what the server must announce
    allow_http: bool = False  # `bench stage-data --allow-http`: plain http for a trusted network


DATA_KEYS = ("file", "sha256", "source", "s3_endpoint", "credentials_secret", "pvc", "mount", "size")
_CLAIM = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")  # a PVC name (DNS-1123 subdomain)


def confined(path: str, absolute_ok: bool = False) -> bool:
    """Does `path` stay inside the folder it is joined to: no `..`, no control characters,
    and not absolute (unless `absolute_ok`: a Slurm data.file may name a pre-staged path)?"""
    if not path or any(ord(c) < 32 for c in path) or ".." in path.split("/"):
        return False
    return absolute_ok or not path.startswith("/")


def path_problems(data: dict[str, Any], *, on_volume: bool) -> list[str]:
    """data.file, a pvc: source and data.mount, each kept inside its volume. `on_volume`: the
    kind stages the file on a volume mounted into the job (its `Target.data_on_volume`), so
    data.file is relative to data.mount; else data.file may name a pre-staged absolute path."""
    errors = []
    file = data.get("file")
    if isinstance(file, str) and not confined(file, absolute_ok=not on_volume):
        where = "inside data.mount (a relative path)" if on_volume else "a path without `..`"
        errors.append(f"data.file must be {where}, got {file!r}")
    source = data.get("source")
    if isinstance(source, str) and source.startswith("pvc:"):
        claim, _, inner = source[len("pvc:") :].partition("/")
        if not _CLAIM.fullmatch(claim) or not confined(inner):
            errors.append(
                f"data.source pvc:CLAIM/path must name a claim and a path inside it (no `..`), got {source!r}"
            )
    mount = data.get("mount")
    if isinstance(mount, str) and (not mount.startswith("/") or not confined(mount, absolute_ok=True)):
        errors.append(f"data.mount must be an absolute path without `..`, got {mount!r}")
    size = data.get("size")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size <= 0):
        errors.append(f"data.size must be the file's size in bytes (an integer > 0), got {size!r}")
    return errors


def check_data(settings: dict[str, Any], where: str, *, on_volume: bool) -> list[str]:
    """Problems of the values in env.yaml's `data:` section (absent is fine); which keys
    may appear is bench.environments.schema's allow-list. `on_volume`: as path_problems."""
    data = settings.get("data")
    if data is None:
        return []
    if not isinstance(data, dict):
        return [f"{where}: data must be a mapping ({', '.join(DATA_KEYS)})"]
    errors = []  # unknown keys: the kind's schema (bench.environments.schema) names them
    for key in DATA_KEYS:
        if key != "size" and data.get(key) is not None and not isinstance(data[key], str):
            errors.append(f"{where}: data.{key} must be a string or null, got {data[key]!r}")
    errors.extend(f"{where}: {p}" for p in path_problems(data, on_volume=on_volume))
    source = data.get("source")
    if isinstance(source, str) and "://" in source and "@" in urllib.parse.urlsplit(source).netloc:
        errors.append(
            f"{where}: data.source {redacted(source)} carries a user name or password (user:password@): "
            "remove it; give the credential as ATLAS_SOURCE_AUTHORIZATION (https) or data.credentials_secret (s3)"
        )
    sha = data.get("sha256")
    if isinstance(sha, str) and (len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha.lower())):
        errors.append(f"{where}: data.sha256 must be 64 hex digits (`sha256sum FILE`), got {sha!r}")
    return errors


def data_spec(settings: dict[str, Any], env: str, *, on_volume: bool, **overrides: Any) -> DataSpec:
    """The staging request for `env`, or StageError naming the missing setting. `on_volume`:
    the kind's `Target.data_on_volume` (as path_problems)."""
    data = dict(settings.get("data") or {})
    allow_http = bool(overrides.pop("allow_http", None))
    data.update({k: v for k, v in overrides.items() if v})
    for key in ("file", "sha256"):
        if not data.get(key):
            raise StageError(
                f"{env}: data.{key} is not set: put it under `data:` in clusters/{env}/env.yaml or pass --{key}"
            )
    problems = path_problems(data, on_volume=on_volume)
    if problems:
        raise StageError(f"{env}: " + "; ".join(problems))
    return DataSpec(**{k: data[k] for k in DATA_KEYS if data.get(k)}, allow_http=allow_http)


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
    if "://" in source and not source.startswith("s3://"):
        headers = {"Authorization": env["ATLAS_SOURCE_AUTHORIZATION"]} if env.get("ATLAS_SOURCE_AUTHORIZATION") else {}
        return open_url(source, headers, env)
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
        return open_url(url, headers, env)
    path = Path(source)
    if not path.is_file():
        raise StageError(f"source {source} is not a file (https://..., s3://bucket/key or a mounted path)")
    return open(path, "rb")


# -- the fetch -------------------------------------------------------------------------
def sweep_partials(dest: Path) -> list[str]:
    """Remove each `.partial` of `dest` whose owner is gone: its fetch holds an exclusive
    flock on it while it lives, and the kernel drops that lock when the process dies (even
    by SIGKILL), so a partial whose lock can be taken is a killed fetch's. Names removed."""
    removed = []
    for old in sorted(dest.parent.glob(f".{dest.name}.*.partial")) if dest.parent.is_dir() else ():
        try:
            fd = os.open(old, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.path.samestat(os.fstat(fd), os.stat(old, follow_symlinks=False)):
                old.unlink()  # still the file we locked: its owner is gone
                removed.append(old.name)
        except OSError:
            pass  # locked by a live fetch (or gone meanwhile): leave it
        finally:
            os.close(fd)
    return removed


def _owned_partial(dest: Path) -> tuple[int, str]:
    """A new `.partial` beside `dest`, locked by this fetch (fd, path). A sweep by another
    fetch may remove it between its creation and the lock: then it is made again."""
    while True:
        fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".partial", dir=dest.parent)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.path.samestat(os.fstat(fd), os.stat(tmp)):
                return fd, tmp
        except FileNotFoundError:
            pass
        os.close(fd)


def _copy(source: str, src: IO[bytes], out: IO[bytes], digest: Any, limit: int) -> int:
    received = 0
    while True:
        block = src.read(min(CHUNK, limit - received + 1))
        if not block:
            return received
        received += len(block)
        if received > limit:
            raise StageError(f"{source} sent more than {limit} bytes (data.size or ATLAS_STAGE_MAX_BYTES); stopped")
        digest.update(block)
        out.write(block)


def stage(
    source: str,
    dest: Path,
    expected: str,
    environ: dict[str, str] | None = None,
    size: int | None = None,
    root: Path | None = None,
) -> str:
    """Copy `source` to `dest` unless it is there already; verify sha256. Returns what happened.
    `size`: the file's bytes (read no more, and a shorter body is "short"); `root`: the mount
    `dest` must stay inside."""
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size <= 0):
        raise StageError(f"--size {size!r}: the file's size in bytes must be an integer more than 0 (or left out)")
    expected = expected.lower()
    if len(expected) != 64 or any(c not in "0123456789abcdef" for c in expected):
        raise StageError(f"the expected sha256 must be 64 hex digits, got {expected!r}")
    if root is not None and not dest.resolve().is_relative_to(Path(root).resolve()):
        raise StageError(f"{dest} is outside {root}: refused (data.file must stay inside its mount)")
    sweep_partials(dest)  # a killed fetch's partial goes now, even when nothing is fetched
    if current_sha256(dest) == expected:
        write_sidecar(dest, expected)
        return f"already staged: {dest} (sha256 {expected[:12]})"
    env = os.environ if environ is None else environ
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # e.g. --dest under a file
        raise StageError(
            f"cannot make the folder {dest.parent} for --dest ({exc.strerror}): give a --dest under a folder"
        ) from None
    what = "the existing file is untouched" if dest.exists() else "nothing was written"
    digest = hashlib.sha256()
    fd, tmp = _owned_partial(dest)
    held = os.dup(fd)  # the lock lives until this copy closes too: after the rename, or at death
    try:
        with os.fdopen(fd, "wb") as out, open_source(source, environ) as src:
            announced = announced_length(src)
            received = _copy(source, src, out, digest, check_length(source, announced, size, max_bytes(env)))
            out.flush()
            os.fsync(out.fileno())
        whole = announced if announced is not None else size
        if whole is not None and received < whole:
            raise StageError(
                f"short body from {source}: received {received} of {whole} bytes (the transfer ended early); "
                f"{what}. Run stage-data again"
            )
        got = digest.hexdigest()
        if got != expected:
            raise StageError(
                f"checksum mismatch for {source}: expected sha256 {expected[:12]}…, got {got[:12]}…; {what}. "
                "Fix the source or data.sha256 in env.yaml (the sha256sum of the file prepare-data wrote)"
            )
        os.replace(tmp, dest)
        write_sidecar(dest, got)
        return f"staged: {dest} (sha256 {got[:12]})"
    except FetchRefused as exc:
        raise StageError(f"{exc}; {what}") from None
    except http.client.HTTPException as exc:  # IncompleteRead and kin: the server died mid-body
        raise StageError(f"short body from {source} ({type(exc).__name__}); {what}. Run stage-data again") from None
    except OSError as exc:
        raise StageError(f"copying {source} to {dest} failed: {exc}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
        os.close(held)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        allow_abbrev=False, prog="python -m bench.stage_data", description=__doc__.split("\n\n")[0]
    )
    sub = parser.add_subparsers(dest="action", required=True)
    fetch = sub.add_parser("fetch", allow_abbrev=False, help="copy SOURCE to DEST unless there already; verify sha256")
    fetch.add_argument("--source", required=True)
    fetch.add_argument("--dest", required=True, type=Path)
    fetch.add_argument("--sha256", required=True)
    fetch.add_argument("--size", type=int, default=None, help="the file's size in bytes: read no more")
    fetch.add_argument("--root", type=Path, default=None, help="the mount DEST must stay inside")
    fetch.add_argument("--allow-http", action="store_true", help="fetch plain http:// too (also: ATLAS_ALLOW_HTTP=1)")
    check = sub.add_parser("check", allow_abbrev=False, help="does DEST exist with this sha256?")
    check.add_argument("--dest", required=True, type=Path)
    check.add_argument("--sha256", required=True)
    args = parser.parse_args(argv)
    # SIGTERM (a deleted Job, a killed pod) unwinds like an error: the .partial is removed.
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        if args.action == "check":
            got = current_sha256(args.dest)
            if got != args.sha256.lower():
                raise StageError(
                    f"{args.dest}: " + ("missing" if got is None else f"sha256 {got[:12]}… is not {args.sha256[:12]}…")
                )
            print(f"ok: {args.dest} (sha256 {got[:12]})")
            return 0
        environ = dict(os.environ, ATLAS_ALLOW_HTTP="1") if args.allow_http else None
        print(stage(args.source, args.dest, args.sha256, environ, size=args.size, root=args.root))
        return 0
    except StageError as exc:
        print(f"stage-data: {exc}", file=sys.stderr)
        return EXIT_MISMATCH if "checksum mismatch" in str(exc) else 1
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
