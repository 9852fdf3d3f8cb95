"""Fixtures shared by every test folder, and how the suite runs on several cores.

`make test` runs pytest with pytest-xdist (`-n 3 --dist loadgroup`): three worker
processes take tests from one queue, each with its own session. A test stays safe
there when it keeps to itself, as every test here must anyway:

- its files under `tmp_path` (or `tmp_path_factory`), never a fixed path or a file in
  the working tree; ports it asks the kernel for (bind to port 0), never fixed ones;
- no state shared through a session fixture that starts or stops something outside
  the process (a cluster, a container): such tests run on one worker, in one
  `xdist_group`. Tests that use the local Slurm (the `local_slurm` fixture or the
  `slurm` mark) are put in the group "local-slurm", podman tests (the `podman` mark) in
  "podman", and the tests of a module that has a module-scoped fixture in one group per
  module, by `pytest_collection_modifyitems` below: a new test of those kinds needs
  nothing more. Anything else of that kind: `@pytest.mark.xdist_group("name")`;
- costly inputs that tests only read (recorded runs, a written report) may be shared: a
  session fixture (built once per worker, copied by a test that changes it:
  `recorded_local_runs` below, test_report.py's `plain_report`), or a file
  made once per session under a lock in the folder above the workers' own (the chaos
  reference run: tests/chaos/test_chaos.py `reference_file_of_session`).
  (tests/xdist_groups.py does the grouping itself: pytest-xdist's does not work with
  this pytest; tests/test_xdist_groups.py checks it.)

Tests that take more than a few seconds are marked `slow` (those of the local Slurm,
podman and the fuzz suite by the hook below; others by `@pytest.mark.slow` or a module's
`pytestmark`) and run first; `make test-fast` leaves them out (`-m "not slow"`), `make
test` runs everything.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fullfs import mounted_tmpfs

# --dist loadgroup's grouping, done here (pytest-xdist's own does not group under pytest 9.2)
pytest_plugins = ("tests.xdist_groups", "tests.cpu_log")

# mark -> xdist group: tests sharing one thing outside the process run on one worker
_SHARED_GROUPS = {"slurm": "local-slurm", "podman": "podman"}


def _module_fixture(item: pytest.Item) -> bool:
    """Whether the test uses a module- or class-scoped fixture (built once per worker that runs it)."""
    info = getattr(item, "_fixtureinfo", None)
    defs = getattr(info, "name2fixturedefs", {}) or {}
    return any(d and d[-1].scope in ("module", "class", "package") for d in defs.values())


@pytest.hookimpl(tryfirst=True)  # before tests/xdist_groups.py reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Give each test that must share a worker its `xdist_group`; mark and order the slow ones.

    The local Slurm's tests (its fixture or the `slurm` mark) and podman's share one
    cluster or one set of containers; the tests of a module with a module-scoped fixture
    (a trained reference run, a started API double) share it, built once, not once per worker.
    """
    for item in items:
        group = "local-slurm" if "local_slurm" in getattr(item, "fixturenames", ()) else None
        for mark, name in _SHARED_GROUPS.items():
            if group is None and item.get_closest_marker(mark) is not None:
                group = name
        if group is None and _module_fixture(item):
            group = "module:" + item.nodeid.split("::", 1)[0]
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))
        if group in ("local-slurm", "podman") or "tests/fuzz/" in item.nodeid:
            item.add_marker(pytest.mark.slow)  # a cluster, containers, thousands of examples
    # Slow tests first (a stable sort): the long ones start while the other worker takes the
    # short ones, so no worker is left with a long test at the end while the other waits.
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


# the fuzz suite's counts, summed over the xdist workers (tests/fuzz/conftest.py counts)
_FUZZ_FROM_WORKERS: dict[str, float] = {}


def fuzz_summary(count: dict[str, float]) -> str:
    """The closing line of the fuzz suite's generated examples."""
    return f"fuzz: {count['examples']} generated examples in {count['tests']} property tests, {count['seconds']:.0f} s"


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """On the xdist controller: add up the fuzz counts each worker handed over."""
    for key, value in getattr(node, "workeroutput", {}).get("fuzz_count", {}).items():
        _FUZZ_FROM_WORKERS[key] = _FUZZ_FROM_WORKERS.get(key, 0) + value


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _FUZZ_FROM_WORKERS.get("examples"):
        terminalreporter.write_line(fuzz_summary(_FUZZ_FROM_WORKERS))


@pytest.fixture(scope="session")
def recorded_local_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """Six finished local runs (the real recorder around the stand-in workload: a second of
    CPU each), recorded once per session (per xdist worker) under RUNS/local/<run id>, for
    the tests that collect them. Read-only: a test copies the ones it needs
    (`copy_recorded_runs`), as collecting may write beside them."""
    from tests.bench.records.test_concurrent_collect import finished_runs

    runs = tmp_path_factory.mktemp("recorded-local-runs")
    return runs, finished_runs(runs / "local", 6)


def copy_recorded_runs(recorded: tuple[Path, list[str]], runs: Path, count: int) -> list[str]:
    """The first `count` of `recorded_local_runs`, copied to `runs`/local/; their run ids."""
    source, ids = recorded
    for run_id in ids[:count]:
        shutil.copytree(source / "local" / run_id, runs / "local" / run_id, symlinks=True)
    return ids[:count]


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A real 16 MiB tmpfs, unmounted after the test (skipped without root)."""
    with mounted_tmpfs(tmp_path / "fs", "16m") as fs:
        yield fs
