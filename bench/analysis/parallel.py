"""Independent runs on every core: records read by forked children, figures on threads.

Reading a record is pandas' CSV parser and numpy, which release the GIL, but also json's
parser and the checks' Python loops, which hold it: on threads, two cores overlap little
of a report's reading. `map_in_children` forks a child per core but one; the children
and then this process take the items from one queue (a pipe of item numbers), so no core
idles while another has work left. A child hands each result back as a file in the
temporary directory (below). This process first runs `meanwhile()` (`bench report`
imports scipy.stats and matplotlib there) and then takes items itself, whose results need
no pickling.

A child dies with this process (PR_SET_PDEATHSIG), and the hand-back folder a killed
process leaves in the temporary directory is removed by the next one.

Where forking is unsafe or impossible (another thread running, no `os.fork`, one core, one
item) the same work runs on threads. Results keep the input order. An item not handed
back (its function raised, its child was killed) is computed again here, in order, so an
exception is raised as it would be serially.

A record's samples are tens of MB of numpy columns. Pickled in band, the child copies them
into the pickle and this process copies them out again into fresh memory, which on a 48 h
record cost about 0.2 s each way when both cores were busy. So a child writes each
contiguous buffer after the pickle, out of band (pickle protocol 5, PEP 574), and this
process maps the file (copy-on-write: the arrays stay writable) and hands pickle those
buffers as they lie: the columns are never copied here.
"""

from __future__ import annotations

import mmap
import os
import pickle
import shutil
import signal
import struct
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn, TypeVar

from bench.parent_death import dies_with

T = TypeVar("T")
R = TypeVar("R")

MAX_WORKERS = 8
MAX_QUEUED = 4096  # item numbers of 4 bytes: the queue fits a pipe's buffer, written before anyone reads
_MISSING = object()
_PREFIX = "bench-children-"  # + the owner's pid + "-": its hand-back folder
_ALIGN = 64  # each out-of-band buffer starts on a cache line (numpy's columns, aligned)


def _workers(items: Sequence[object]) -> int:
    return min(len(items), os.cpu_count() or 1, MAX_WORKERS)


def map_runs(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """`[fn(x) for x in items]`, on up to one thread per core (work that mostly releases the GIL)."""
    workers = _workers(items)
    if workers < 2:
        return [fn(x) for x in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(fn, items))


def _take(queue: int) -> int | None:
    """The next item number from the queue, None when it is empty (a read of 4 bytes is atomic)."""
    got = os.read(queue, 4)
    return int.from_bytes(got, "big") if len(got) == 4 else None


def _child(fn: Callable[[T], R], items: Sequence[T], queue: int, folder: Path, done: int, parent: int) -> NoReturn:
    """In a forked child: take items until the queue is empty; each result handed back to its
    own file (`_hand_back`), then its number and b"1" (b"0": fn raised) on `done`. Never runs
    the parent's exit code."""
    code = 0
    try:
        if not dies_with(parent):  # a killed `bench` takes its readers along
            return
        while (i := _take(queue)) is not None:
            try:
                value = fn(items[i])
            except Exception:  # noqa: BLE001 - computed again by the parent, which raises it there
                os.write(done, i.to_bytes(4, "big") + b"0")
                continue
            _hand_back(value, folder / f"{i}.pickle")
            os.write(done, i.to_bytes(4, "big") + b"1")
    except BaseException:  # noqa: BLE001 - what it did not hand back, the parent computes
        code = 1
    finally:
        os._exit(code)


def _hand_back(value: object, path: Path) -> None:
    """Write `value` to `path`: a header (the pickle's length, then each buffer's), the pickle,
    then its contiguous buffers out of band, each at a multiple of _ALIGN."""
    buffers: list[memoryview] = []

    def out_of_band(buffer: pickle.PickleBuffer) -> bool:
        try:
            buffers.append(buffer.raw())
        except BufferError:  # not contiguous: pickled in band
            return True
        return False

    head = pickle.dumps(value, protocol=5, buffer_callback=out_of_band)
    with path.open("wb") as fh:
        fh.write(struct.pack(f"<QQ{len(buffers)}Q", len(head), len(buffers), *(b.nbytes for b in buffers)))
        fh.write(head)
        for buffer in buffers:
            fh.write(bytes(-fh.tell() % _ALIGN))
            fh.write(buffer)


def _handed_back(path: Path) -> object:
    """What `_hand_back` wrote, its buffers mapped from the file, not read (_MISSING when unreadable)."""
    try:
        with path.open("rb") as fh:
            view = memoryview(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY))
        head_bytes, count = struct.unpack_from("<QQ", view)
        at = 16 + 8 * count
        sizes = struct.unpack_from(f"<{count}Q", view, 16)
        head, at = view[at : at + head_bytes], at + head_bytes
        buffers = []
        for size in sizes:
            at += -at % _ALIGN
            buffers.append(view[at : at + size])
            at += size
        if at > len(view):
            return _MISSING  # shorter than its header says
        return pickle.loads(head, buffers=buffers)
    except (OSError, ValueError, EOFError, struct.error, pickle.UnpicklingError):
        return _MISSING


def _sweep_orphans() -> None:
    """Remove the hand-back folders of `bench` processes that were killed (SIGKILL leaves
    them, with whatever their children had written): the folder's name holds its owner's pid."""
    for folder in Path(tempfile.gettempdir()).glob(f"{_PREFIX}*-*"):
        owner = folder.name[len(_PREFIX) :].split("-", 1)[0]
        if not owner.isdigit():
            continue
        try:
            os.kill(int(owner), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except OSError:  # alive, another user's
            continue


def _on_threads(fn: Callable[[T], R], items: Sequence[T], meanwhile: Callable[[], object] | None) -> list[R]:
    if meanwhile is None:
        return map_runs(fn, items)
    side = threading.Thread(target=meanwhile, name="bench-meanwhile", daemon=True)
    side.start()
    try:
        return map_runs(fn, items)
    finally:
        side.join()  # gone before the caller forks again (the report's chart children)


def _announced(done: int) -> list[tuple[int, bool]]:
    """Every (item number, handed back) the children wrote on `done`, read until they are all gone."""
    data = b""
    while chunk := os.read(done, 1 << 16):
        data += chunk
    return [(int.from_bytes(data[k : k + 4], "big"), data[k + 4 : k + 5] == b"1") for k in range(0, len(data) - 4, 5)]


def map_in_children(
    fn: Callable[[T], R],
    items: Sequence[T],
    meanwhile: Callable[[], object] | None = None,
    cost: Callable[[T], float] | None = None,
) -> list[R]:
    """`[fn(x) for x in items]` on every core: forked children take items while this process
    runs `meanwhile()`, then it takes the rest with them; fn's results must pickle. On threads
    where forking is not safe. `cost(x)`: how long x takes, roughly; the dearest are queued
    first, so that no process is left alone with a long one at the end."""
    workers = _workers(items)
    if workers < 2 or len(items) > MAX_QUEUED or not hasattr(os, "fork") or threading.active_count() > 1:
        return _on_threads(fn, items, meanwhile)
    _sweep_orphans()
    try:
        folder = Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-"))
    except OSError:  # nowhere to hand results back through (a full disk): threads need none
        return _on_threads(fn, items, meanwhile)
    try:
        return _forked(fn, items, meanwhile, cost, workers, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _forked(
    fn: Callable[[T], R],
    items: Sequence[T],
    meanwhile: Callable[[], object] | None,
    cost: Callable[[T], float] | None,
    workers: int,
    folder: Path,
) -> list[R]:
    """`map_in_children` once it may fork, its children handing results back through `folder`."""
    results: list[object] = [_MISSING] * len(items)
    queue, queue_in = os.pipe()
    order = sorted(range(len(items)), key=lambda i: -cost(items[i])) if cost else range(len(items))
    os.write(queue_in, b"".join(i.to_bytes(4, "big") for i in order))
    os.close(queue_in)  # empty once taken: a read then returns nothing, in every process
    done, done_in = os.pipe()
    children: list[int] = []
    parent = os.getpid()
    try:
        for _ in range(workers - 1):
            try:
                pid = os.fork()
            except OSError:  # no process to be had (a limit): the others do the work
                break
            if pid == 0:
                os.close(done)
                _child(fn, items, queue, folder, done_in, parent)
            children.append(pid)
        os.close(done_in)  # from here only the children hold it: EOF when they are all gone
        done_in = -1
        if meanwhile is not None:
            meanwhile()
        while (i := _take(queue)) is not None:
            try:
                results[i] = fn(items[i])
            except Exception:  # noqa: BLE001, S112 - computed again below, in order, and raised then
                continue
        for i, ok in _announced(done):
            if ok:
                results[i] = _handed_back(folder / f"{i}.pickle")
    except BaseException:  # interrupted: the children's work is no longer wanted
        for pid in children:
            os.kill(pid, signal.SIGKILL)
        raise
    finally:
        for fd in (queue, done, done_in):
            if fd >= 0:
                os.close(fd)
        for pid in children:
            os.waitpid(pid, 0)
    return [fn(x) if r is _MISSING else r for r, x in zip(results, items)]  # type: ignore[misc]
