"""Where the suite's CPU goes: each test's CPU seconds, its own and its children's.

`--durations` gives wall time, which on a 2-core machine running three workers mixes a
test's work with its neighbours' and with its waits (a Slurm queue, a killed job). The
suite's goal is CPU-bound, so this counts what each test costs: set ATLAS_TEST_CPU_LOG to a
file and every worker appends one JSON line per test (setup, call and teardown together):
user + system seconds of the worker and of the children it waited for (a job that Slurm
runs is not its child and is not counted). `python -m tests.cpu_log FILE` sums it up.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest

_INSIDE = "ATLAS_TEST_CPU_LOG_INSIDE"


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any) -> Iterator[None]:
    path = os.environ.get("ATLAS_TEST_CPU_LOG")
    if not path or os.environ.get(_INSIDE):  # a pytest that a test runs: its CPU is that test's
        yield
        return
    cpu, wall = _cpu(), time.perf_counter()
    os.environ[_INSIDE] = item.nodeid
    try:
        yield
    finally:
        del os.environ[_INSIDE]
    line = {"test": item.nodeid, "cpu_s": round(_cpu() - cpu, 3), "wall_s": round(time.perf_counter() - wall, 3)}
    with open(path, "a") as fh:
        fh.write(json.dumps(line) + "\n")


def summary(lines: list[dict[str, Any]], top: int = 15) -> str:
    """The total, the `top` costliest tests and modules by CPU seconds."""
    modules: dict[str, float] = defaultdict(float)
    for row in lines:
        modules[row["test"].split("::", 1)[0]] += row["cpu_s"]
    total = sum(modules.values())
    out = [f"{len(lines)} tests, {total / 60:.1f} CPU-minutes (workers and their waited-for children)", ""]
    out += [f"{row['cpu_s']:8.1f} s  {row['test']}" for row in sorted(lines, key=lambda r: -r["cpu_s"])[:top]]
    out.append("")
    out += [f"{cpu:8.1f} s  {name}" for name, cpu in sorted(modules.items(), key=lambda m: -m[1])[:top]]
    return "\n".join(out)


if __name__ == "__main__":
    with open(sys.argv[1]) as fh:
        print(summary([json.loads(line) for line in fh if line.strip()]))
