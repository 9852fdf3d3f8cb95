"""`bench run`'s wait never polls back to back when a status is expensive.

A Slurm status is a whole Ansible run (~2 s of CPU); polled every 0.5 s after each such run,
waiting kept a core busy for as long as the job ran. The double below is a cluster whose
status costs a known time; the wait must rest at least that long before asking again.
"""

from __future__ import annotations

import io
import time
from types import SimpleNamespace

from bench.errors import AtlasError
from bench.targets.base import RunState, RunStatus, Target
from bench.targets.lifecycle import wait


class SlowStatusClusterDouble:
    """A cluster double: each status takes `cost_s`; the run finishes `runs_for_s` after the first."""

    long_poll_s = 0.0  # its status answers at once: the wait loop rests between rounds
    watch = Target.watch  # the default: `status` of each run

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


class WaitingClusterDouble:
    """A cluster double whose status waits on its side (`long_poll_s`), as Slurm's watch.yml
    does: a watch returns when the run's state differs from the one known, or at `wait_s`.
    The run is pending, then running from `runs_at_s`, then completed from `ends_at_s`."""

    long_poll_s = 5.0

    def __init__(self, runs_at_s: float, ends_at_s: float) -> None:
        self.env = SimpleNamespace(name="waiting-double")
        self.runs_at_s, self.ends_at_s = runs_at_s, ends_at_s
        self.began = time.monotonic()
        self.watches: list[tuple[float, RunState | None, float]] = []  # (asked at, state known, wait_s)

    def state(self) -> RunState:
        age = time.monotonic() - self.began
        return (
            RunState.COMPLETED
            if age >= self.ends_at_s
            else RunState.RUNNING
            if age >= self.runs_at_s
            else RunState.PENDING
        )

    def watch(self, known: dict[str, RunStatus | None], wait_s: float) -> dict[str, RunStatus]:
        ((run_id, seen),) = known.items()
        self.watches.append((time.monotonic() - self.began, seen.state if seen else None, wait_s))
        deadline = time.monotonic() + wait_s
        while seen is not None and self.state() is seen.state and time.monotonic() < deadline:
            time.sleep(0.02)  # the scheduler's side polls; bench's side waits
        return {run_id: RunStatus(run_id, self.state(), "double")}


def test_a_waiting_target_is_asked_once_per_change_and_never_after_the_end() -> None:
    cluster = WaitingClusterDouble(runs_at_s=0.4, ends_at_s=1.2)
    out = io.StringIO()
    final = wait(cluster, ["r1"], out=out, poll_s=0.05)  # type: ignore[arg-type]
    assert final["r1"].state is RunState.COMPLETED
    # one round to learn the state, one per change (running, completed): none after the end
    assert [known for _, known, _ in cluster.watches] == [None, RunState.PENDING, RunState.RUNNING], cluster.watches
    assert cluster.watches[-1][0] < cluster.ends_at_s  # the last one was asked before the run ended
    assert time.monotonic() - cluster.began < cluster.ends_at_s + 1.0  # and its end seen at once, not at wait_s
    assert out.getvalue().splitlines()[-1] == "waiting-double/r1: completed (double)"


def test_a_timeout_bounds_the_wait_on_the_scheduler_side() -> None:
    cluster = WaitingClusterDouble(runs_at_s=0.0, ends_at_s=60.0)
    began = time.monotonic()
    try:
        wait(cluster, ["r1"], out=io.StringIO(), poll_s=0.05, timeout_s=0.6)  # type: ignore[arg-type]
    except AtlasError as exc:
        assert "gave up waiting after 1 s" in str(exc)
    else:
        raise AssertionError("a run that never ends was waited for past the timeout")
    assert time.monotonic() - began < 2.0
    assert all(wait_s <= 0.6 for _, _, wait_s in cluster.watches), cluster.watches


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_running_line_keeps_ticking_on_a_terminal_while_the_scheduler_side_waits() -> None:
    cluster = WaitingClusterDouble(runs_at_s=0.0, ends_at_s=2.6)
    out = Terminal()
    wait(cluster, ["r1"], out=out, poll_s=0.05)  # type: ignore[arg-type]
    lines = [part for part in out.getvalue().split("\r\033[K") if part]
    # the first report, then the ticker's rewrites while the second watch waits, then the end
    assert lines[0] == "waiting-double/r1: running     0 s double"
    assert "waiting-double/r1: running     1 s double" in lines and "waiting-double/r1: running     2 s double" in lines
    assert lines[-1] == "waiting-double/r1: completed (double)\n"
    assert len(cluster.watches) == 2
