"""`map_in_children`: records read by forked children and this process, results in order.

Each case runs in a fresh interpreter: a pytest worker may run threads of its own (xdist's),
and with another thread running the function rightly falls back to threads.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.killed_parent import survivors

REPO = Path(__file__).resolve().parents[3]

PRELUDE = """
import json, os, signal, sys, threading, time
from pathlib import Path
from bench.analysis.parallel import map_in_children
PARENT = os.getpid()
LOG = Path(sys.argv[1])
def log(x):
    with LOG.open("a") as fh:
        fh.write(f"{x}\\n")
def taken():
    return LOG.read_text().split() if LOG.exists() else []
"""

CASES = {
    # order kept; the children and this process share the work; meanwhile runs here first
    "order": """
def fn(x):
    log(x)
    if os.getpid() != PARENT:  # a child waits until this process has taken an item too
        waited = time.monotonic()
        while str(PARENT) not in LOG.with_suffix(".pids").read_text() and time.monotonic() - waited < 20:
            time.sleep(0.01)
    else:
        LOG.with_suffix(".pids").write_text(str(PARENT))
    return (x * x, os.getpid())
LOG.with_suffix(".pids").write_text("")
def meanwhile():
    while not taken():  # a child has begun: meanwhile runs beside it
        time.sleep(0.01)
    log("meanwhile")
out = map_in_children(fn, list(range(12)), meanwhile, cost=lambda x: x)
print(json.dumps({"out": out, "parent": PARENT, "log": taken(), "threads": threading.active_count()}))
""",
    # a child whose function raises hands nothing back for that item: this process computes it
    "raised-in-child": """
def fn(x):
    if x == 3 and os.getpid() != PARENT:
        raise ValueError("only in a child")
    return os.getpid()
def meanwhile():
    while "3" not in taken():
        time.sleep(0.01)
def fn_logged(x):
    log(x)
    return fn(x)
out = map_in_children(fn_logged, list(range(6)), meanwhile, cost=lambda x: x == 3)
print(json.dumps({"out": out, "parent": PARENT}))
""",
    # an item that raises everywhere raises here, as it would serially
    "raised-everywhere": """
def fn(x):
    if x == 4:
        raise ValueError(f"item {x} is bad")
    return x
try:
    map_in_children(fn, list(range(6)))
except ValueError as exc:
    print(json.dumps({"raised": str(exc)}))
""",
    # a child killed mid-way: what it did not hand back is computed here
    "killed": """
def fn(x):
    log(x)
    if x == 5 and os.getpid() != PARENT:
        os.kill(os.getpid(), signal.SIGKILL)
    return x + 100
def meanwhile():
    while "5" not in taken():
        time.sleep(0.01)
out = map_in_children(fn, list(range(8)), meanwhile, cost=lambda x: x == 5)
print(json.dumps({"out": out}))
""",
    # another thread running: forking is unsafe, so threads do it, meanwhile on one of them
    "threads": """
stop = threading.Event()
other = threading.Thread(target=stop.wait)
other.start()
seen = []
out = map_in_children(lambda x: (x, os.getpid()), list(range(4)), lambda: seen.append(threading.current_thread().name))
stop.set()
other.join()
print(json.dumps({"out": out, "parent": PARENT, "meanwhile_on": seen}))
""",
    # interrupted while the children work: the error goes up, no child is left behind
    "interrupted": """
def fn(x):
    log(x)
    time.sleep(30)
    return x
def meanwhile():
    while not taken():
        time.sleep(0.01)
    raise KeyboardInterrupt
t = time.monotonic()
try:
    map_in_children(fn, list(range(4)), meanwhile)
except KeyboardInterrupt:
    pass
try:
    os.waitpid(-1, os.WNOHANG)
    left = True
except ChildProcessError:
    left = False
print(json.dumps({"children_left": left, "seconds": time.monotonic() - t}))
""",
    # results that cannot be handed back (they do not pickle; a full disk fails alike) are computed here
    "unpicklable": """
def fn(x):
    log(os.getpid())
    return lambda: (x, os.getpid())
def meanwhile():
    while not taken():
        time.sleep(0.01)
out = [f() for f in map_in_children(fn, list(range(5)), meanwhile)]
print(json.dumps({"out": out, "parent": PARENT, "tried_in": sorted(set(map(int, taken())))}))
""",
    # a child's columns come back mapped from its file (out of band), equal and writable;
    # a buffer that is not contiguous comes back in band, equal too
    "columns": """
import mmap
import numpy as np
import pandas as pd
def fn(x):
    frame = pd.DataFrame({"time": np.arange(50_000, dtype=float) + x, "n": np.arange(50_000) * x})
    return {"pid": os.getpid(), "frame": frame, "array": np.arange(1000.0) * x, "strided": np.arange(100.0)[::3] * x}
def meanwhile():
    while not taken():
        time.sleep(0.01)
def mapped(array):
    while array is not None:
        if isinstance(array, memoryview) and isinstance(array.obj, mmap.mmap):
            return True
        array = getattr(array, "base", None) if not isinstance(array, memoryview) else array.obj
    return False
def logged(x):
    log(x)
    return fn(x)
got = map_in_children(logged, list(range(4)), meanwhile)
rows = []
for x, value in enumerate(got):
    want = fn(x)
    equal = value["frame"].equals(want["frame"])
    equal = equal and all(np.array_equal(value[k], want[k]) for k in ("array", "strided"))
    value["array"][0] = -1.0  # writable: the file's pages are copied on write
    rows.append({
        "child": value["pid"] != PARENT,
        "equal": bool(equal),
        "mapped": mapped(value["array"]) and mapped(value["frame"]["time"].to_numpy()),
    })
print(json.dumps({"rows": rows}))
""",
    # the hand-back folders of killed processes are removed; a live process's are kept
    "sweep": """
import tempfile
dead = Path(tempfile.gettempdir()) / f"bench-children-{sys.argv[2]}-abc"
live = Path(tempfile.gettempdir()) / f"bench-children-{PARENT}-abc"
for folder in (dead, live):
    folder.mkdir()
    (folder / "0.pickle").write_bytes(b"left behind")
map_in_children(abs, [-1, -2])
print(json.dumps({"dead_left": dead.exists(), "live_left": live.exists()}))
""",
    # killed with SIGKILL: its children go too (they would read on, and write into /tmp)
    "killed-parent": """
def fn(x):
    log(os.getpid())
    time.sleep(60)
    return x
def meanwhile():
    time.sleep(60)
map_in_children(fn, list(range(4)), meanwhile)
""",
}


def _run(case: str, tmp_path: Path, *args: str) -> dict:
    script = tmp_path / f"{case}.py"
    script.write_text(PRELUDE + CASES[case])
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path / f"{case}.log"), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TMPDIR": str(tmp_path)},  # its hand-back folders here, not in the machine's /tmp
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.fixture(autouse=True)
def _two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fork path needs two cores; on one, every case would take the threads' path."""
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: map_in_children runs on this process alone")


def test_results_keep_their_order_and_every_process_takes_work(tmp_path: Path) -> None:
    got = _run("order", tmp_path)
    assert [v for v, _ in got["out"]] == [x * x for x in range(12)]
    pids = {pid for _, pid in got["out"]}
    assert got["parent"] in pids and len(pids) >= 2  # this process and at least one child
    log = got["log"]
    assert log[0] == "11"  # the dearest item (cost = x) was queued first
    assert log.index("meanwhile") >= 1  # meanwhile ran here while a child had begun
    assert sorted(int(x) for x in log if x != "meanwhile") == list(range(12))  # each item taken once
    assert got["threads"] == 1


def test_an_item_a_child_could_not_compute_is_computed_here(tmp_path: Path) -> None:
    got = _run("raised-in-child", tmp_path)
    assert got["out"][3] == got["parent"]
    assert len(got["out"]) == 6


def test_an_item_that_raises_raises_here(tmp_path: Path) -> None:
    assert _run("raised-everywhere", tmp_path) == {"raised": "item 4 is bad"}


def test_a_killed_child_loses_nothing(tmp_path: Path) -> None:
    assert _run("killed", tmp_path)["out"] == [x + 100 for x in range(8)]


def test_with_other_threads_running_it_uses_threads(tmp_path: Path) -> None:
    got = _run("threads", tmp_path)
    assert [x for x, _ in got["out"]] == [0, 1, 2, 3]
    assert {pid for _, pid in got["out"]} == {got["parent"]}
    assert got["meanwhile_on"] == ["bench-meanwhile"]


def test_an_interrupt_stops_the_children(tmp_path: Path) -> None:
    got = _run("interrupted", tmp_path)
    assert got["children_left"] is False
    assert got["seconds"] < 30  # the children were stopped, not waited for


def test_the_folders_of_killed_processes_are_swept(tmp_path: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    got = _run("sweep", tmp_path, gone.stdout.strip())
    assert got == {"dead_left": False, "live_left": True}


def test_a_killed_parent_takes_its_children_along(tmp_path: Path) -> None:
    script = tmp_path / "killed-parent.py"
    script.write_text(PRELUDE + CASES["killed-parent"])
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    assert survivors(script, tmp_path / "killed-parent.log", env) == [], "a reader outlived its killed parent"


def test_a_childs_columns_come_back_mapped_not_copied(tmp_path: Path) -> None:
    rows = _run("columns", tmp_path)["rows"]
    assert all(r["equal"] for r in rows)
    from_children = [r for r in rows if r["child"]]
    assert from_children, "no child took an item"
    assert all(r["mapped"] for r in from_children)  # the columns lie in the mapped file
    assert not any(r["mapped"] for r in rows if not r["child"])  # this process's own results need no file


def test_results_that_cannot_be_handed_back_are_computed_here(tmp_path: Path) -> None:
    got = _run("unpicklable", tmp_path)
    assert [x for x, _ in got["out"]] == list(range(5))
    assert {pid for _, pid in got["out"]} == {got["parent"]}
    assert len(got["tried_in"]) >= 2  # a child tried first, and nothing it did was lost
    assert not list(tmp_path.glob("bench-children-*")), "the hand-back folder is removed"


def test_a_hand_back_file_cut_short_or_empty_is_missing_not_wrong(tmp_path: Path) -> None:
    """A file shorter than its header says (a full disk mid-write) is not read as a result:
    the item is computed again, never handed back with a column cut short."""
    import numpy as np

    from bench.analysis.parallel import _MISSING, _hand_back, _handed_back

    path = tmp_path / "0.pickle"
    _hand_back({"column": np.arange(10_000.0)}, path)
    assert np.array_equal(_handed_back(path)["column"], np.arange(10_000.0))
    whole = path.read_bytes()
    for cut in (len(whole) - 8, 40, 0):
        path.write_bytes(whole[:cut])
        assert _handed_back(path) is _MISSING, cut
