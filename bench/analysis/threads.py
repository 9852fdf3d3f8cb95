"""One thread per core over independent runs.

Reading a record and computing its figures spend most of their time in pandas' CSV
parser, json's C parser and numpy, which release the GIL, so on 2 cores a report's
runs are read and measured in about two thirds of the time one after another takes.
Results keep the input order; the first exception is raised as it would be serially.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def map_runs(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """`[fn(x) for x in items]`, on up to one thread per core."""
    workers = min(len(items), os.cpu_count() or 1, 8)
    if workers < 2:
        return [fn(x) for x in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(fn, items))
