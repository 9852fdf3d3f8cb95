"""`imported_meanwhile`: a report's heavy libraries imported on a thread while it reads."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from bench.commands.preload import imported_meanwhile


def test_the_modules_are_imported_on_a_thread_that_is_gone_when_the_block_ends(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "preload_probe.py").write_text("import threading\nIMPORTED_ON = threading.current_thread().name\n")
    (tmp_path / "preload_broken.py").write_text("raise ImportError('broken on purpose')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("preload_probe", "preload_broken"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    before = threading.active_count()
    with imported_meanwhile("preload_broken", "preload_probe"):  # a failed import is left to its user
        pass
    assert threading.active_count() == before  # joined: the report forks its chart children next
    assert sys.modules["preload_probe"].IMPORTED_ON == "bench-preload"
    assert "preload_broken" not in sys.modules
    with pytest.raises(ImportError, match="broken on purpose"):
        __import__("preload_broken")  # where it is used, the import names the problem
