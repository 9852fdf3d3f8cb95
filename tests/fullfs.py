"""A real small file system for disk-full tests: a tmpfs mounted for one test.

Mounting needs root (CI runs as root on Debian); elsewhere the tests that use it are
skipped with the reason. `fill` writes ballast until the file system says ENOSPC, then
gives back `leave` bytes, so a test controls how much room is left.
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def mounted_tmpfs(where: Path, size: str = "16m") -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("a full-disk test mounts a small tmpfs, which needs root")
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip() or proc.returncode}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def fill(fs: Path, leave: int = 0) -> Path:
    """Fill `fs` to ENOSPC with a ballast file, then free `leave` bytes of it."""
    ballast = fs / "ballast"
    chunk = b"\0" * 65536
    with open(ballast, "wb") as fh:
        try:
            while True:
                fh.write(chunk)
                fh.flush()
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
    if leave:
        os.truncate(ballast, max(0, ballast.stat().st_size - leave))
    return ballast
