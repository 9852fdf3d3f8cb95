"""Fixtures shared by every test folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fullfs import mounted_tmpfs


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A real 16 MiB tmpfs, unmounted after the test (skipped without root)."""
    with mounted_tmpfs(tmp_path / "fs", "16m") as fs:
        yield fs
