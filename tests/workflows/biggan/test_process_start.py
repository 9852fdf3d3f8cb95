"""The workload's process start (the timeline's `workload_start`) is read to a clock tick."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from tests.workflows.biggan.conftest import REPO, env

TICK_S = 0.01  # bench.records.timeline.PROCESS_START_RESOLUTION_S


@pytest.mark.slow
def test_a_child_reads_its_own_start_between_its_spawn_and_its_first_line() -> None:
    """psutil's create_time put it up to a second before the spawn (boot time in whole
    seconds), so a local run's launch phase came out negative."""
    code = (
        "import json, time; now = time.time()\n"
        "from workflows.biggan.runtime import process_start_time\n"
        "print(json.dumps([process_start_time(), now]))"
    )
    for _ in range(3):
        spawned = time.time()
        out = subprocess.run(
            [sys.executable, "-c", code], cwd=REPO, env=env(), capture_output=True, text=True, check=True
        ).stdout
        start, first_line = json.loads(out)
        assert spawned - TICK_S <= start <= first_line, (spawned, start, first_line)
