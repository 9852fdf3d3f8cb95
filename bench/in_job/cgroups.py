"""CPU and memory limits of the cgroup this process runs in (container, Slurm job).

A job's real budget is its cgroup, not the host: a pod with `limits.cpu: 4` on a
64-core node can use 4 cores. Both cgroup v2 and v1 (and hybrid hosts) are read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
_UNLIMITED = 1 << 60  # v1 writes "no limit" as a huge page-aligned number


@dataclass(frozen=True)
class CgroupLimits:
    cpu_limit_cores: float | None  # None: no CPU quota
    memory_limit_bytes: int | None  # None: no memory limit
    memory_used_bytes: int | None
    version: int | None  # 1, 2 or None when no cgroup files are readable


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _own_paths(proc_cgroup: Path) -> dict[str, str]:
    """controller -> path from /proc/self/cgroup ("" is the v2 unified hierarchy)."""
    paths: dict[str, str] = {}
    text = _read(proc_cgroup) or ""
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for ctrl in parts[1].split(",") if parts[1] else [""]:
            paths[ctrl] = parts[2]
    return paths


def _candidates(base: Path, rel: str | None, name: str) -> list[Path]:
    """The file in our own cgroup first, then at the mount root (inside a container
    the root *is* our cgroup while /proc/self/cgroup still names the host path)."""
    out = []
    if rel and rel != "/":
        out.append(base / rel.lstrip("/") / name)
    out.append(base / name)
    return out


def _first(paths: list[Path]) -> str | None:
    for p in paths:
        value = _read(p)
        if value is not None:
            return value
    return None


def _int_limit(text: str | None) -> int | None:
    if text is None or text == "max":
        return None
    try:
        value = int(text)
    except ValueError:
        return None
    return None if value <= 0 or value >= _UNLIMITED else value


def read_limits(root: Path = CGROUP_ROOT, proc_cgroup: Path = Path("/proc/self/cgroup")) -> CgroupLimits:
    own = _own_paths(proc_cgroup)
    if (root / "cgroup.controllers").exists():  # pure v2
        rel = own.get("")
        cpu_max = _first(_candidates(root, rel, "cpu.max"))
        cpu = None
        if cpu_max:
            quota, _, period = cpu_max.partition(" ")
            if quota != "max" and period:
                try:
                    cpu = int(quota) / int(period)
                except ValueError:
                    cpu = None
        mem = _int_limit(_first(_candidates(root, rel, "memory.max")))
        used = _int_limit(_first(_candidates(root, rel, "memory.current")))
        return CgroupLimits(cpu, mem, used, 2)
    mem_dir, cpu_dir = root / "memory", root / "cpu"
    if not mem_dir.is_dir() and not cpu_dir.is_dir():
        return CgroupLimits(None, None, None, None)
    quota = _first(_candidates(cpu_dir, own.get("cpu"), "cpu.cfs_quota_us"))
    period = _first(_candidates(cpu_dir, own.get("cpu"), "cpu.cfs_period_us"))
    cpu = None
    try:
        if quota is not None and period is not None and int(quota) > 0:
            cpu = int(quota) / int(period)
    except ValueError:
        cpu = None
    mem = _int_limit(_first(_candidates(mem_dir, own.get("memory"), "memory.limit_in_bytes")))
    used = _int_limit(_first(_candidates(mem_dir, own.get("memory"), "memory.usage_in_bytes")))
    return CgroupLimits(cpu, mem, used, 1)


class CgroupReader:
    """Finds the limit files once, then reads only memory usage per sample (cheap)."""

    def __init__(self, root: Path = CGROUP_ROOT, proc_cgroup: Path = Path("/proc/self/cgroup")) -> None:
        self.limits = read_limits(root, proc_cgroup)
        own = _own_paths(proc_cgroup)
        if self.limits.version == 2:
            cands = _candidates(root, own.get(""), "memory.current")
        elif self.limits.version == 1:
            cands = _candidates(root / "memory", own.get("memory"), "memory.usage_in_bytes")
        else:
            cands = []
        self._usage_file = next((p for p in cands if p.exists()), None)

    def memory_used(self) -> int | None:
        if self._usage_file is None:
            return None
        return _int_limit(_read(self._usage_file))
