"""Import the libraries a command needs later on a thread while it reads its records.

`bench report` needs scipy.stats (the bootstrap, about 1 s of CPU to import) and
matplotlib (about 0.7 s) only after it has read its runs, and reading spends most of its
time in pandas' CSV parser and numpy, which let other threads run: imported meanwhile,
they cost the report almost no time of its own. Nothing else changes. A module that fails
to import here is imported again where it is used, and that import names the problem.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager


def _import_all(names: list[str]) -> None:
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001, S112 - imported again where it is used, which raises it
            continue


@contextmanager
def imported_meanwhile(*names: str) -> Iterator[None]:
    """Import `names` on a thread while the block runs; joined when it ends, so the block's
    caller may fork again (the report's charts are drawn by forked children)."""
    missing = [name for name in names if name not in sys.modules]
    if not missing:
        yield
        return
    thread = threading.Thread(target=_import_all, args=(missing,), name="bench-preload", daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join()
