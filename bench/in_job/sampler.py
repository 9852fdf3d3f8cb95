"""The sampler: one CSV row per interval about the job's process tree, host and GPUs.

Runs as a daemon thread inside `bench record`. It must never harm the job: every
probe is wrapped, faults are collected (once per distinct message) for `run.json`,
and each row is flushed as written so a hard kill loses at most the current row.
"""

from __future__ import annotations

import csv
import os
import threading
import time
from pathlib import Path
from typing import IO, Any

import psutil

from bench.in_job.cgroups import CgroupReader
from bench.in_job.gpus import GpuProbe
from bench.records.contract import BASE_COLUMNS, gpu_columns

# psutil's host CPU % (and steal, iowait) is the share since the previous read *in the same
# thread* (psutil 7 keeps one per thread: its first read in a thread says 0.0), and over less
# than this the kernel's counters (USER_HZ ticks) have barely moved. A row without such an
# interval behind it (the sampler thread's first, a last row right after a loop row) leaves
# those cells empty: the 0.0 the sampler thread's first read gave pulled a short run's mean
# down (real 4-second runs read 75 % on a host busy all along, 9-second runs 89 %).
MIN_HOST_INTERVAL_S = 0.1


def _fmt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        text = f"{value:.3f}".rstrip("0").rstrip(".")
        return text if text not in ("", "-0") else "0"
    return str(value)


class ProcessTree:
    """CPU % needs the same psutil.Process object between calls, so keep them."""

    def __init__(self, root_pid: int) -> None:
        self.root_pid = root_pid
        self._procs: dict[int, psutil.Process] = {}

    def sample(self) -> tuple[float | None, int | None, int]:
        try:
            root = self._procs.get(self.root_pid) or psutil.Process(self.root_pid)
            members = [root, *root.children(recursive=True)]
        except psutil.Error:
            return None, None, 0  # the job is gone: nothing to sample, not a fault
        current: dict[int, psutil.Process] = {}
        cpu, rss = 0.0, 0
        for p in members:
            proc = self._procs.get(p.pid, p)
            try:
                with proc.oneshot():
                    cpu += proc.cpu_percent(None)
                    rss += proc.memory_info().rss
                current[p.pid] = proc
            except psutil.Error:
                continue  # vanished between listing and reading
        self._procs = current
        return cpu, rss, len(current)


class Sampler:
    def __init__(
        self,
        csv_path: Path,
        root_pid: int,
        interval_s: float = 1.0,
        gpu_probe: GpuProbe | None = None,
        cgroup: CgroupReader | None = None,
    ) -> None:
        self.csv_path = Path(csv_path)
        self.interval_s = max(0.01, float(interval_s))
        self.gpu = gpu_probe if gpu_probe is not None else GpuProbe()
        self.cgroup = cgroup if cgroup is not None else CgroupReader()
        self.tree = ProcessTree(root_pid)
        self.rows = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._host_read_at: dict[int, float] = {}  # thread -> monotonic time of its last host CPU read
        self._fh: IO[str] | None = None
        self._writer: Any = None
        self.columns = BASE_COLUMNS + gpu_columns(len(self.gpu.handles))

    @property
    def faults(self) -> list[dict[str, str]]:
        return self.gpu.faults

    def _open(self) -> None:
        new = not self.csv_path.exists() or self.csv_path.stat().st_size == 0
        if not new:
            # Appending to a resumed run's file: only if it has our exact columns.
            with self.csv_path.open() as fh:
                header = fh.readline().rstrip("\n").split(",")
            if header != self.columns:
                stem = self.csv_path.stem
                n = 1
                while (self.csv_path.parent / f"{stem}.{n}.csv").exists():
                    n += 1
                self.csv_path = self.csv_path.parent / f"{stem}.{n}.csv"
                new = True
        self._fh = self.csv_path.open("a", newline="")
        if not new and self._fh.tell() > 0:
            # A killed writer may have left half a line: start on a fresh one.
            with self.csv_path.open("rb") as fh:
                fh.seek(-1, os.SEEK_END)
                if fh.read(1) != b"\n":
                    self._fh.write("\n")
        self._writer = csv.writer(self._fh, lineterminator="\n")
        if new:
            self._writer.writerow(self.columns)
            self._fh.flush()

    def sample_once(self) -> list[str]:
        now = time.time()
        try:
            cpu, rss, count = self.tree.sample()
        except Exception as exc:  # never let a probe stop the sampler
            self.gpu.fault("process", exc)
            cpu, rss, count = None, None, 0
        try:
            vm = psutil.virtual_memory()
            busy = self._host_busy()
            host = (busy[0], vm.total - vm.available, vm.total, busy[1], busy[2])
        except Exception as exc:
            self.gpu.fault("host", exc)
            host = (None, None, None, None, None)
        try:
            cg_used = self.cgroup.memory_used()
        except Exception as exc:
            self.gpu.fault("cgroup", exc)
            cg_used = None
        limits = self.cgroup.limits
        row = [
            round(now, 3),
            cpu,
            rss,
            count,
            *host,
            limits.cpu_limit_cores,
            limits.memory_limit_bytes,
            cg_used,
            *self.gpu.sample(),
        ]
        return [_fmt(v) for v in row]

    def _host_busy(self) -> tuple[Any, Any, Any]:
        """(host CPU %, steal %, iowait %) since this thread's previous read; empty (None)
        where there is none or it was under MIN_HOST_INTERVAL_S ago. Steal, iowait: Linux only."""
        ident, now = threading.get_ident(), time.monotonic()
        last = self._host_read_at.get(ident)
        if last is not None and now - last < MIN_HOST_INTERVAL_S:
            return None, None, None
        times = psutil.cpu_times_percent(None)  # one more read of /proc/stat
        cpu = psutil.cpu_percent(None)
        self._host_read_at[ident] = now
        if last is None:
            return None, None, None
        return cpu, getattr(times, "steal", None), getattr(times, "iowait", None)

    def _write(self, row: list[str]) -> None:
        assert self._writer is not None and self._fh is not None
        self._writer.writerow(row)
        self._fh.flush()
        self.rows += 1

    def _loop(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            try:
                self._write(self.sample_once())
            except Exception as exc:  # e.g. disk full: record it, keep the job alive
                self.gpu.fault("sampler", exc)
            next_at += self.interval_s
            delay = next_at - time.monotonic()
            if delay < 0:  # fell behind (suspended host): skip, do not burst
                next_at = time.monotonic()
                delay = 0
            self._stop.wait(delay)

    def start(self) -> None:
        self._open()
        self._host_busy()  # primes this thread's host CPU read, for the last row stop() writes
        self.tree.sample()
        self._thread = threading.Thread(target=self._loop, name="bench-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=max(5.0, self.interval_s * 2))
        try:
            self._write(self.sample_once())  # a last row at the job's end
        except Exception as exc:
            self.gpu.fault("sampler", exc)
        if self._fh is not None:
            self._fh.close()
