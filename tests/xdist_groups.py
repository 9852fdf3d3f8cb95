"""`--dist loadgroup` that works with this pytest: tests of one `xdist_group` share a worker.

pytest-xdist 3.8 groups tests by rewriting each item's `_nodeid` on the worker; pytest 9.2
keeps the node id elsewhere (`Node._id`), so that rewrite changes nothing and grouped tests
are spread over the workers (two sessions would then start and stop one local Slurm under
each other). Here each worker writes the group of every test it collected (from its
`xdist_group` mark) to a folder the controller gave it, and the controller's scheduler
reads them back: the same scheduling as xdist's LoadGroupScheduling, keyed by the node id
as pytest reports it. Registered from tests/conftest.py; used only with `--dist loadgroup`.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

_KEY = "atlas_xdist_groups_dir"
_FOLDERS: list[str] = []  # the controller's folder (made when the first worker starts), removed at the end


def _folder() -> str:
    if not _FOLDERS:
        _FOLDERS.append(tempfile.mkdtemp(prefix="atlas-xdist-groups-"))
    return _FOLDERS[0]


def group_of(item: pytest.Item) -> str | None:
    """The item's `xdist_group` name (several marks: their names joined, as xdist does)."""
    names = sorted(
        {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
    )
    return "_".join(names) or None


@pytest.hookimpl(trylast=True)  # after every hook that adds marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a worker: write {node id: group} for the tests that have a group."""
    folder = getattr(config, "workerinput", {}).get(_KEY)
    if folder is None:
        return
    groups = {item.nodeid: g for item in items if (g := group_of(item)) is not None}
    worker = config.workerinput["workerid"]
    tmp = Path(folder) / f".{worker}.json"
    tmp.write_text(json.dumps(groups))
    tmp.replace(Path(folder) / f"{worker}.json")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """On the controller: tell each worker where to write its groups."""
    node.workerinput[_KEY] = _folder()


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler.loadscope import LoadScopeScheduling

    folder = _folder()

    class GroupScheduling(LoadScopeScheduling):
        """xdist's LoadScopeScheduling with one scope per group, else one per test."""

        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:  # every worker has collected (and written) by now
                self.groups = {}
                for path in Path(folder).glob("*.json"):
                    self.groups.update(json.loads(path.read_text()))
            group = self.groups.get(nodeid)
            return f"group:{group}" if group is not None else nodeid

    return GroupScheduling(config, log)


def pytest_unconfigure(config: pytest.Config) -> None:
    while _FOLDERS:
        shutil.rmtree(_FOLDERS.pop(), ignore_errors=True)
