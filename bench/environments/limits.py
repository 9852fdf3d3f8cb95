"""What the scheduler or the API server would refuse later, refused by `bench validate` now.

A value that passes validate but fails at `sbatch` or at the API server (or worse, is
accepted there and never scheduled) costs a queue wait to find out. Each check names the
key and the range. Sources of the ranges: sbatch(1) `--time` formats
(https://slurm.schedmd.com/sbatch.html#OPT_time), Kubernetes resource quantities
(https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/quantity/); the upper
bounds are far beyond any real node (no node has 64 GPUs) yet small enough that a typo
(an extra few zeros) cannot pass.
"""

from __future__ import annotations

import re
from typing import Any

from bench.records.strict_numbers import finite

MAX_NODES = 1024
MAX_GPUS_PER_NODE = 64
MAX_CPUS = 1024  # per task, or per GPU
MAX_MEMORY_GIB_PER_GPU = 4096
MAX_SEGMENTS = 1000  # resubmissions of one run (each one a Slurm job of time_limit)
MAX_TIME_LIMIT_MIN = 366 * 24 * 60  # a year: beyond that it is a typo, not a request

# sbatch --time: "minutes", "minutes:seconds", "hours:minutes:seconds", "days-hours",
# "days-hours:minutes", "days-hours:minutes:seconds"; digits only, no sign, no newline.
_TIME = re.compile(r"(?:(\d{1,6})-(\d{1,6})(?::(\d{1,6}))?(?::(\d{1,6}))?|(\d{1,9})(?::(\d{1,6}))?(?::(\d{1,6}))?)")
_MEM = re.compile(r"\d{1,9}[KMGT]?")  # sbatch --mem: a size with an optional unit
_SIGNAL = re.compile(r"(?:[BR]:)?(?:SIG)?[A-Z0-9]{1,8}(?:@\d{1,5})?")  # sbatch --signal
_WORD = re.compile(r"[A-Za-z0-9_.,:@+-]{1,128}")  # partition, account, qos, constraint names


def is_number(value: Any) -> bool:
    """A real, finite number (not a bool, not NaN, not infinity): strict_numbers.finite's rule."""
    return finite(value) is not None


def int_in(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def time_limit_minutes(value: Any) -> float | None:
    """sbatch --time as minutes, or None when sbatch would refuse it (or it is beyond a year)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return float(value) if 1 <= value <= MAX_TIME_LIMIT_MIN else None
    if not isinstance(value, str):
        return None
    match = _TIME.fullmatch(value)
    if not match:
        return None
    days, hours, d_min, d_sec, m1, m2, m3 = match.groups()
    if days is not None:
        minutes = int(days) * 1440 + int(hours) * 60 + int(d_min or 0) + int(d_sec or 0) / 60
    elif m3 is not None:  # hours:minutes:seconds
        minutes = int(m1) * 60 + int(m2) + int(m3) / 60
    else:  # minutes[:seconds]
        minutes = int(m1) + int(m2 or 0) / 60
    return minutes if 0 < minutes <= MAX_TIME_LIMIT_MIN else None


SLURM_INTS = {  # key: (least, most)
    "nodes": (1, MAX_NODES),
    "gpus_per_node": (0, MAX_GPUS_PER_NODE),
    "ntasks_per_node": (1, MAX_CPUS),
    "cpus_per_task": (1, MAX_CPUS),
    "max_segments": (1, MAX_SEGMENTS),
}


def slurm_problems(slurm: dict[str, Any]) -> list[str]:
    """Values of env.yaml `slurm:` that sbatch would refuse (or that no cluster can hold)."""
    problems = []
    for key, (low, high) in SLURM_INTS.items():
        if key in slurm and not int_in(slurm[key], low, high):
            problems.append(f"slurm.{key}: must be an integer from {low} to {high}, got {slurm[key]!r}")
    if "time_limit" in slurm and time_limit_minutes(slurm["time_limit"]) is None:
        problems.append(
            f"slurm.time_limit: must be an sbatch time (minutes, HH:MM:SS or D-HH:MM:SS) of at most a year, "
            f"got {slurm['time_limit']!r}"
        )
    if slurm.get("mem") not in (None, "") and not (
        int_in(slurm["mem"], 1, 10**9) or (isinstance(slurm["mem"], str) and _MEM.fullmatch(slurm["mem"]))
    ):
        problems.append(
            f"slurm.mem: must be a size such as 32G (or empty for the partition's default), got {slurm['mem']!r}"
        )
    if slurm.get("signal") not in (None, "") and not (
        isinstance(slurm["signal"], str) and _SIGNAL.fullmatch(slurm["signal"])
    ):
        problems.append(f"slurm.signal: must be an sbatch --signal such as B:USR1@60, got {slurm['signal']!r}")
    for key in ("partition", "account", "qos", "constraint", "reservation"):
        value = slurm.get(key)
        if value not in (None, "") and not (isinstance(value, str) and _WORD.fullmatch(value)):
            problems.append(
                f"slurm.{key}: must be a name (letters, digits, _.,:@+-; no spaces or newlines), got {value!r}"
            )
    return problems


def shape_problems(shape: dict[str, Any], where: str) -> list[str]:
    """Values of env.yaml `shape:` no scheduler can grant: each with the key and its range."""
    errors = []
    if not int_in(shape.get("nodes"), 1, MAX_NODES):
        errors.append(f"{where}: shape.nodes must be an integer from 1 to {MAX_NODES}, got {shape.get('nodes')!r}")
    if not int_in(shape.get("gpus_per_node"), 0, MAX_GPUS_PER_NODE):
        errors.append(
            f"{where}: shape.gpus_per_node must be a number of GPUs from 0 to {MAX_GPUS_PER_NODE} "
            f"(no node has more), got {shape.get('gpus_per_node')!r}"
        )
    for key, high in (("cpus_per_gpu", MAX_CPUS), ("memory_gib_per_gpu", MAX_MEMORY_GIB_PER_GPU)):
        value = shape.get(key)
        if value is not None and not (is_number(value) and 0 < value <= high):
            errors.append(f"{where}: shape.{key} must be a finite number > 0 and <= {high}, got {value!r}")
    return errors
