"""Import the libraries a command needs later while its records are being read.

`bench report` needs scipy.stats (the bootstrap, about 1 s of CPU to import) and
matplotlib (about 0.7 s) only after it has read its runs. The records are read by forked
children (bench.analysis.parallel), so the report imports these meanwhile, in its own
process, where they cost it almost no time of its own. Nothing else changes. A module
that fails to import here is imported again where it is used, and that import names the
problem.
"""

from __future__ import annotations

import importlib


def import_quietly(*names: str) -> None:
    """Import each of `names` now; one that fails is left for its user to import (and report)."""
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001, S112 - imported again where it is used, which raises it
            continue
