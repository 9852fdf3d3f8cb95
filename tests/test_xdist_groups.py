"""`make test`'s `-n 2 --dist loadgroup` keeps each group of tests on one worker.

Run for real: a throw-away suite under pytest-xdist with this repository's conftest, each
test writing down the worker that ran it. The local Slurm's tests (by fixture or mark) and
podman's share a worker each, and so do an explicit `xdist_group` and the tests of a module
with a module-scoped fixture (built once); the rest spread."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

SUITE = """
import os
from pathlib import Path

import pytest

OUT = Path(__file__).parent / "ran"


@pytest.fixture
def local_slurm():
    return {}


def note(name):
    OUT.mkdir(exist_ok=True)
    (OUT / name).write_text(os.environ["PYTEST_XDIST_WORKER"])


@pytest.mark.parametrize("i", range(4))
def test_by_fixture(local_slurm, i):
    note(f"slurm-fixture-{i}")


@pytest.mark.slurm
@pytest.mark.parametrize("i", range(4))
def test_by_mark(i):
    note(f"slurm-mark-{i}")


@pytest.mark.podman
@pytest.mark.parametrize("i", range(4))
def test_podman(i):
    note(f"podman-{i}")


@pytest.mark.xdist_group("mine")
@pytest.mark.parametrize("i", range(4))
def test_explicit(i):
    note(f"mine-{i}")


@pytest.fixture(scope="module")
def built_once():
    note(f"built-{os.getpid()}")


@pytest.mark.parametrize("i", range(4))
def test_module_fixture(built_once, i):
    note(f"module-fixture-{i}")


@pytest.mark.parametrize("i", range(12))
def test_free(i):
    note(f"free-{i}")
"""


@pytest.mark.slow
def test_grouped_tests_share_a_worker_and_the_rest_spread(tmp_path: Path) -> None:
    (tmp_path / "test_suite.py").write_text(SUITE)
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    args = ["-p", "tests.conftest", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup", "-q"]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *args, "-o", "addopts=", "--rootdir", str(tmp_path), str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ran = {p.name: p.read_text() for p in (tmp_path / "ran").iterdir()}
    assert len(ran) == 33, sorted(ran)

    def workers(prefix: str) -> set[str]:
        return {w for name, w in ran.items() if name.startswith(prefix)}

    slurm = workers("slurm-")  # fixture and mark: one group, as they share one cluster
    assert len(slurm) == 1 and len(workers("podman-")) == 1 and len(workers("mine-")) == 1, ran
    assert len(workers("module-fixture-")) == 1 and len(workers("built-")) == 1, ran  # built once
    assert workers("") == {"gw0", "gw1"}  # both workers worked
