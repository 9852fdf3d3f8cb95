"""`import_quietly`: a report's heavy libraries imported while its records are read."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bench.commands.preload import import_quietly


def test_the_modules_are_imported_and_a_broken_one_is_left_to_its_user(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "preload_probe.py").write_text("LOADED = True\n")
    (tmp_path / "preload_broken.py").write_text("raise ImportError('broken on purpose')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("preload_probe", "preload_broken"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    import_quietly("preload_broken", "preload_probe")  # a failed import does not stop the next
    assert sys.modules["preload_probe"].LOADED
    assert "preload_broken" not in sys.modules
    with pytest.raises(ImportError, match="broken on purpose"):
        __import__("preload_broken")  # where it is used, the import names the problem
