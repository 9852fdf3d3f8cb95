"""`bench run`'s wait never polls back to back when a status is expensive.

A Slurm status is a whole Ansible run (~2 s of CPU); polled every 0.5 s after each such run,
waiting kept a core busy for as long as the job ran. The double below is a cluster whose
status costs a known time; the wait must rest at least that long before asking again.
"""

from __future__ import annotations

import io
import time
from types import SimpleNamespace

from bench.targets.base import RunState, RunStatus
from bench.targets.lifecycle import wait


class SlowStatusClusterDouble:
    """A cluster double: each status takes `cost_s`; the run finishes `runs_for_s` after the first."""

    def __init__(self, cost_s: float, runs_for_s: float) -> None:
        self.env = SimpleNamespace(name="slow-double")
        self.cost_s, self.runs_for_s = cost_s, runs_for_s
        self.calls: list[tuple[float, float]] = []

    def status(self, run_id: str) -> RunStatus:
        began = time.monotonic()
        time.sleep(self.cost_s)
        first = self.calls[0][0] if self.calls else began
        self.calls.append((began, time.monotonic()))
        done = time.monotonic() - first >= self.runs_for_s
        return RunStatus(run_id, RunState.COMPLETED if done else RunState.RUNNING, "double")


def test_an_expensive_status_is_never_asked_again_before_as_long_as_it_took() -> None:
    cluster = SlowStatusClusterDouble(cost_s=0.15, runs_for_s=1.2)
    final = wait(cluster, ["r1"], out=io.StringIO(), poll_s=0.01)  # type: ignore[arg-type]
    assert final["r1"].state is RunState.COMPLETED
    assert len(cluster.calls) >= 2
    for (began, ended), (next_began, _) in zip(cluster.calls, cluster.calls[1:]):
        assert next_began - ended >= (ended - began) * 0.99, cluster.calls  # rested as long as it asked


def test_a_cheap_status_keeps_the_short_poll() -> None:
    cluster = SlowStatusClusterDouble(cost_s=0.0, runs_for_s=0.3)
    wait(cluster, ["r1"], out=io.StringIO(), poll_s=0.02)  # type: ignore[arg-type]
    assert len(cluster.calls) >= 5  # ~15 rounds of 0.02 s: never slowed to a fixed long interval
