"""cgroup limit parsing on cgroup trees the test writes (v2, v1, none)."""

from __future__ import annotations

from pathlib import Path

from bench.in_job.cgroups import CgroupReader, read_limits


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_v2_limits_from_own_cgroup(tmp_path: Path) -> None:
    root, proc = tmp_path / "cg", tmp_path / "proc_cgroup"
    write(root / "cgroup.controllers", "cpu memory\n")
    write(root / "job" / "cpu.max", "400000 100000\n")
    write(root / "job" / "memory.max", "8589934592\n")
    write(root / "job" / "memory.current", "1048576\n")
    write(proc, "0::/job\n")
    limits = read_limits(root, proc)
    assert (limits.cpu_limit_cores, limits.memory_limit_bytes, limits.version) == (4.0, 8589934592, 2)
    assert CgroupReader(root, proc).memory_used() == 1048576


def test_v2_unlimited_and_container_root(tmp_path: Path) -> None:
    root, proc = tmp_path / "cg", tmp_path / "proc_cgroup"
    write(root / "cgroup.controllers", "cpu memory\n")
    write(root / "cpu.max", "max 100000\n")
    write(root / "memory.max", "max\n")
    write(proc, "0::/host/path/not/mounted\n")  # inside a container: root is ours
    limits = read_limits(root, proc)
    assert limits.cpu_limit_cores is None and limits.memory_limit_bytes is None


def test_v1_limits(tmp_path: Path) -> None:
    root, proc = tmp_path / "cg", tmp_path / "proc_cgroup"
    write(root / "cpu" / "slurm" / "cpu.cfs_quota_us", "200000\n")
    write(root / "cpu" / "slurm" / "cpu.cfs_period_us", "100000\n")
    write(root / "memory" / "slurm" / "memory.limit_in_bytes", "4294967296\n")
    write(root / "memory" / "slurm" / "memory.usage_in_bytes", "123\n")
    write(proc, "4:memory:/slurm\n1:cpu,cpuacct:/slurm\n")
    limits = read_limits(root, proc)
    assert (limits.cpu_limit_cores, limits.memory_limit_bytes, limits.version) == (2.0, 4294967296, 1)
    assert CgroupReader(root, proc).memory_used() == 123


def test_v1_no_limit_and_no_cgroups(tmp_path: Path) -> None:
    root, proc = tmp_path / "cg", tmp_path / "proc_cgroup"
    write(root / "cpu" / "cpu.cfs_quota_us", "-1\n")
    write(root / "cpu" / "cpu.cfs_period_us", "100000\n")
    write(root / "memory" / "memory.limit_in_bytes", "9223372036854771712\n")
    write(proc, "4:memory:/\n1:cpu:/\n")
    limits = read_limits(root, proc)
    assert limits.cpu_limit_cores is None and limits.memory_limit_bytes is None and limits.version == 1
    assert read_limits(tmp_path / "nothing", proc).version is None
