"""Writes that a crash, a full disk or a second command at once cannot half-do.

- `replace_atomically` (the one atomic writer; `write_bytes_atomic`, `write_json_atomic`
  wrap it): temporary file beside the target, fsync, rename: a reader sees the old file
  or the new one, never a 0-byte or half one.
- `replace_dir`: a folder built under a hidden temporary name takes the place of the
  old one (old moved aside, new renamed in, old removed); `sweep_temp_dirs` removes
  what a killed command left behind.
- `locked`: an exclusive `fcntl.flock` on `<folder>/.atlas.lock` for the length of a
  `with` block; the kernel drops it when the holder dies, so a killed command never
  leaves a stale lock (https://man7.org/linux/man-pages/man2/flock.2.html).
- `disk_full`: ENOSPC/EDQUOT turned into `DiskFullError` naming the path and the space
  needed, exit code `EXIT_DISK_FULL` (bench/records/contract.py).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.errors import DiskFullError

LOCK_NAME = ".atlas.lock"
DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
# mkdtemp's names: ".<name>.<8 random chars>" (what `temp_dir` and older collects make)
TEMP_DIR = re.compile(r"^\.[A-Za-z0-9_.-]+\.(tmp|old)-?[a-z0-9_]{8}$|^\.[A-Za-z0-9_.-]+\.[a-z0-9_]{8}$")


def free_bytes(path: Path) -> int | None:
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def is_disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in DISK_FULL_ERRNOS


def disk_full_error(exc: OSError, path: Path | str | None = None, needed: int | None = None) -> DiskFullError:
    """The named error for a full disk or quota: which path, how much was needed, how much is free."""
    where = Path(path or exc.filename or ".")
    free = free_bytes(where if where.is_dir() else where.parent)
    parts = [f"{os.strerror(exc.errno or errno.ENOSPC)} writing {where}"]
    if needed is not None:
        parts.append(f"needs about {needed / 1e6:.1f} MB")
    if free is not None:
        parts.append(f"{free / 1e6:.1f} MB free")
    return DiskFullError("; ".join(parts) + "; free space and run the command again (nothing recorded was changed)")


def replace_atomically(path: Path, data: bytes, mode: int | None = None) -> None:
    """The one atomic write: a temporary file beside `path`, fsync, rename over it; the
    temporary is removed on any failure and the OSError passes through unchanged. `mode`
    (e.g. 0o755 for a git hook) is set before the rename, so the file never lacks it."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_bytes_atomic(path: Path, data: bytes, mode: int | None = None) -> None:
    """`replace_atomically`, with ENOSPC/EDQUOT turned into DiskFullError naming the path."""
    try:
        replace_atomically(path, data, mode)
    except OSError as exc:
        if is_disk_full(exc):
            raise disk_full_error(exc, path, len(data)) from None
        raise


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """`data` as indented, key-sorted JSON (run.json's form), written by `replace_atomically`."""
    replace_atomically(path, (json.dumps(data, indent=2, sort_keys=True, default=str) + "\n").encode())


def write_text_atomic(path: Path, text: str, mode: int | None = None) -> None:
    write_bytes_atomic(path, text.encode(), mode)


def temp_dir(dest: Path) -> Path:
    """An empty hidden folder beside `dest` (same file system, so the final rename is atomic)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{dest.name}.tmp-", dir=dest.parent))


def replace_dir(tmp: Path, dest: Path) -> None:
    """Put the finished folder `tmp` in place of `dest`. Between the two renames `dest`
    is briefly absent, never partial; callers hold `locked(dest.parent)` against a
    second writer."""
    old = None
    if dest.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{dest.name}.old-", dir=dest.parent))
        os.rename(dest, old / dest.name)
    os.rename(tmp, dest)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def sweep_temp_dirs(folder: Path) -> list[Path]:
    """Remove the hidden temporary folders a killed command left in `folder` (call it
    while holding `locked(folder)`, so nobody else is filling one)."""
    removed = []
    try:
        entries = list(Path(folder).iterdir())
    except OSError:
        return removed
    for entry in entries:
        if TEMP_DIR.match(entry.name) and entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


@contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Exclusive lock on `folder` for the block; a second command waits its turn."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o664)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the lock
