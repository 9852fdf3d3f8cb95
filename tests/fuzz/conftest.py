"""Counts the fuzz suite's generated examples and prints the total with its run time.

Hypothesis lets a plugin wrap `test.hypothesis.inner_test` (the body run once per
example); wrapping it with a counter gives the real number of examples run, shrinking
included, which the issue asks to see in every `make test`. Under pytest-xdist each
worker counts its own share and hands it to the controller, which prints the sum
(tests/conftest.py: this file is not loaded there, as the controller collects nothing)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.conftest import fuzz_summary

COUNT = {"examples": 0, "tests": 0, "seconds": 0.0}


def _counting(inner: Any) -> Any:
    def run(*args: Any, **kwargs: Any) -> Any:
        COUNT["examples"] += 1
        return inner(*args, **kwargs)

    return run


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        handle = getattr(getattr(item, "obj", None), "hypothesis", None)
        if handle is not None and "tests/fuzz/" in str(item.fspath).replace("\\", "/"):
            handle.inner_test = _counting(handle.inner_test)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    start = time.monotonic()
    yield
    if "tests/fuzz/" in str(item.fspath).replace("\\", "/"):
        COUNT["seconds"] += time.monotonic() - start
        COUNT["tests"] += hasattr(getattr(item, "obj", None), "hypothesis")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """On an xdist worker: hand this worker's counts to the controller."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["fuzz_count"] = dict(COUNT)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if COUNT["examples"]:  # without xdist; under it the controller prints (tests/conftest.py)
        terminalreporter.write_line(fuzz_summary(COUNT))
