"""The sampler on real processes: a tree that grows, a process that vanishes."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from bench.in_job.gpus import GpuProbe
from bench.in_job.sampler import BASE_COLUMNS, MIN_HOST_INTERVAL_S, ProcessTree, Sampler

TREE = (
    "import subprocess, sys, time\n"
    "kids = [subprocess.Popen([sys.executable, '-c', 'import time; x = bytearray(20_000_000); time.sleep(30)'])"
    " for _ in range(2)]\n"
    "time.sleep(30)\n"
)


def test_tree_is_summed_and_a_vanished_process_is_not_an_error(tmp_path: Path) -> None:
    parent = subprocess.Popen([sys.executable, "-c", TREE])
    try:
        tree = ProcessTree(parent.pid)
        deadline = time.monotonic() + 20
        count, rss = 0, None
        # until the children exist *and* hold their memory (under load they allocate late)
        while time.monotonic() < deadline and not (count == 3 and (rss or 0) > 40_000_000):
            _, rss, count = tree.sample()
            time.sleep(0.2)
        assert count == 3 and rss > 40_000_000  # both children hold 20 MB each
    finally:
        parent.kill()
        parent.wait()
    assert tree.sample() == (None, None, 0)


def test_rows_are_flushed_while_running_and_gpu_less_header(tmp_path: Path) -> None:
    # a busy child: the host is never idle while it samples, so no host CPU read may say 0
    busy = "import time\nend = time.time() + 30\nwhile time.time() < end: pass"
    child = subprocess.Popen([sys.executable, "-c", busy])
    csv = tmp_path / "samples-h.csv"
    sampler = Sampler(csv, child.pid, interval_s=0.05, gpu_probe=GpuProbe(visible=""))
    try:
        sampler.start()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and csv.read_text().count("\n") < 6:
            time.sleep(0.05)
        lines = csv.read_text().splitlines()  # readable before stop(): flushed per row
        assert lines[0].split(",") == BASE_COLUMNS and len(lines) >= 4
    finally:
        child.kill()
        child.wait()
        sampler.stop()
    df = pd.read_csv(csv)
    assert df["time"].is_monotonic_increasing and df["time"].iloc[0] > 1.6e9
    assert pd.isna(df["proc_rss_bytes"].iloc[-1])  # last row: the job is gone
    # host CPU % is the share since the previous read: the first row, right after the primed
    # read, has no interval to measure and stays empty (psutil would say 0.0), as does a row
    # under MIN_HOST_INTERVAL_S after the last read (this sampler's interval is shorter)
    host = df[["host_cpu_percent", "host_cpu_steal_percent", "host_cpu_iowait_percent"]]  # psutil's, on Linux
    assert host.iloc[0].isna().all()
    read = host.dropna()
    assert len(read) >= 2 and ((read >= 0) & (read <= 100.5)).all().all()
    assert (read["host_cpu_percent"] > 0).all(), read  # psutil's first read in a thread says 0.0
    loop = df.iloc[:-1]  # the sampler thread's rows (stop() writes the last from its own thread)
    gaps = loop["time"][host["host_cpu_percent"].iloc[:-1].notna()].diff().dropna()
    assert (gaps >= MIN_HOST_INTERVAL_S - 0.01).all(), gaps
    assert sampler.faults == []


def test_resumed_file_with_other_columns_gets_a_new_name(tmp_path: Path) -> None:
    csv = tmp_path / "samples-h.csv"
    csv.write_text("time,other\n1,2\n")
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    sampler = Sampler(csv, child.pid, interval_s=1, gpu_probe=GpuProbe(visible=""))
    sampler.start()
    sampler.stop()
    assert sampler.csv_path.name == "samples-h.1.csv"
    assert csv.read_text() == "time,other\n1,2\n"
