"""Fixtures of the workload's tests: one CPU thread per PyTorch process.

`make test` runs three pytest workers on two cores, and every torch process (the worker
itself, and each training process a test starts) would otherwise run two intra-op
threads. On a busy machine those threads wait on each other, spinning: the
imagenet128-deep compile guard test, run alone, spent 96 s of CPU in its trainer at two
threads and 45 s at one, for the same work. (The smoke preset sets `runtime.threads: 1`
itself, and a smoke Trainer built in a worker leaves torch at one thread for every later
test there, so which tests paid the spinning depended on the order they ran in.) Nothing
these tests check depends on the thread count (the digests a test compares come from
runs under the same setting), so their processes run one thread. (tests/benchmarks
was measured the same way and gained nothing: 160 s of CPU before, 176 s after, within
a shared machine's noise; it has no fixture of this kind.)
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def one_torch_thread(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """OMP_NUM_THREADS=1 for the processes a test starts, one thread for torch in this one."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    torch = sys.modules.get("torch")  # the modules that use torch have imported it
    before = torch.get_num_threads() if torch is not None else None
    if torch is not None:
        torch.set_num_threads(1)
    yield
    if torch is not None and before is not None:
        torch.set_num_threads(before)
