"""One CPU thread per PyTorch process in the tests that train (tests/workflows, tests/benchmarks).

`make test` runs three pytest workers on two cores, and every torch process (the worker
itself, and each training process a test starts) would otherwise run two intra-op
threads. On a busy machine those threads wait on each other, spinning: the compile
guard's steps took 16 s of CPU at two threads and 4 s at one, the same numbers for the
same work. Nothing these tests check depends on the thread count (the digests a test
compares come from runs under the same setting), so their processes run one thread.
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
