"""The job's resource shape: nodes × GPUs per node (and CPU / memory per GPU).

Why it is part of "identical": a 4-GPU run is about 4× faster than a 1-GPU run, and a
comparison that does not say so calls that a platform difference. An environment
declares its shape in `env.yaml` (`shape:`); the recorder writes the shape that really
ran into `run.json` (`shape`), read from the scheduler and the pod, not from env.yaml;
`bench validate` warns when environments that are compared with each other declare
different shapes, and the comparison shows per-GPU figures beside the raw ones.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

SHAPE_KEYS = ("nodes", "gpus_per_node", "cpus_per_gpu", "memory_gib_per_gpu")


@dataclass(frozen=True)
class Shape:
    nodes: int
    gpus_per_node: int
    cpus_per_gpu: float | None = None
    memory_gib_per_gpu: float | None = None

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def label(self) -> str:
        nodes = f"{self.nodes} node{'s' if self.nodes != 1 else ''}"
        return f"{nodes} × {self.gpus_per_node} GPU{'s' if self.gpus_per_node != 1 else ''}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "nodes": self.nodes,
            "gpus_per_node": self.gpus_per_node,
            "gpus": self.gpus,
            "cpus_per_gpu": self.cpus_per_gpu,
            "memory_gib_per_gpu": self.memory_gib_per_gpu,
        }


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_shape(settings: Mapping[str, Any], where: str) -> list[str]:
    """Problems of the values in env.yaml's `shape:` (absent is fine: the kind's own keys
    then say it); which keys may appear is bench.envschema's allow-list."""
    shape = settings.get("shape")
    if shape is None:
        return []
    if not isinstance(shape, dict):
        return [f"{where}: shape must be a mapping (nodes, gpus_per_node, cpus_per_gpu, memory_gib_per_gpu)"]
    from bench.limits import shape_problems  # unknown keys: the kind's schema (bench.envschema) names them

    return shape_problems(shape, where)


def declared_shape(settings: Mapping[str, Any]) -> Shape | None:
    """The shape env.yaml declares: `shape:`, else the kind's own keys (slurm:, hardware:)."""
    shape = settings.get("shape")
    if isinstance(shape, dict) and _is_int(shape.get("nodes")) and _is_int(shape.get("gpus_per_node")):
        return Shape(shape["nodes"], shape["gpus_per_node"], shape.get("cpus_per_gpu"), shape.get("memory_gib_per_gpu"))
    slurm = settings.get("slurm") if isinstance(settings.get("slurm"), dict) else {}
    hardware = settings.get("hardware") if isinstance(settings.get("hardware"), dict) else {}
    nodes = slurm.get("nodes", 1)
    gpus = slurm.get("gpus_per_node", hardware.get("gpus_per_job", hardware.get("gpus_per_node", 0)))
    if _is_int(nodes) and _is_int(gpus):
        return Shape(nodes, gpus)
    return None


def shape_warnings(declared: Mapping[str, Shape | None]) -> list[str]:
    """One line per group of compared environments whose shapes differ."""
    shapes = {env: s for env, s in declared.items() if s is not None}
    if len({(s.nodes, s.gpus_per_node) for s in shapes.values()}) <= 1:
        return []
    listing = ", ".join(f"{env} {s.label}" for env, s in sorted(shapes.items()))
    return [
        f"environments compared with each other run different shapes ({listing}): raw figures differ "
        "by the GPU count; give them the same `shape:` in env.yaml, or read the per-GPU figures"
    ]


# -- what really ran (inside the job, by the recorder) ---------------------------------
def _int_env(environ: Mapping[str, str], *names: str) -> tuple[int | None, str | None]:
    for name in names:
        match = re.match(r"^\s*(\d+)", environ.get(name, ""))
        if match:
            return int(match.group(1)), name
    return None, None


def _nproc(command: Iterable[str]) -> int | None:
    """`--nproc-per-node N` / `--nproc_per_node=N` of a torchrun command line."""
    args = list(command)
    for i, arg in enumerate(args):
        for flag in ("--nproc-per-node", "--nproc_per_node"):
            if arg == flag and i + 1 < len(args) and args[i + 1].isdigit():
                return int(args[i + 1])
            if arg.startswith(flag + "=") and arg.split("=", 1)[1].isdigit():
                return int(arg.split("=", 1)[1])
    return None


def _nnodes(command: Iterable[str]) -> int | None:
    args = list(command)
    for i, arg in enumerate(args):
        if arg == "--nnodes" and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith("--nnodes="):
            value = arg.split("=", 1)[1]
        else:
            continue
        last = value.split(":")[-1]  # elastic "MIN:MAX": the most that may join
        return int(last) if last.isdigit() else None
    return None


def observed_shape(
    gpus: list[dict[str, Any]], command: list[str], environ: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The shape this job really has, and where each number came from.

    Nodes: Slurm's allocation (SLURM_JOB_NUM_NODES), else torchrun's `--nnodes`, else 1.
    GPUs per node: the GPUs NVML shows this job (a container sees only its allocation;
    on Slurm, CUDA_VISIBLE_DEVICES / SLURM_GPUS_ON_NODE say what was allocated when NVML
    shows the whole node). Processes per node: torchrun's `--nproc-per-node`, else 1.
    """
    env = os.environ if environ is None else environ
    nodes, nodes_from = _int_env(env, "SLURM_JOB_NUM_NODES", "SLURM_NNODES")
    if nodes is None and _nnodes(command) is not None:
        nodes, nodes_from = _nnodes(command), "torchrun --nnodes"
    if nodes is None:
        nodes, nodes_from = 1, "default (no scheduler said otherwise)"
    visible = env.get("CUDA_VISIBLE_DEVICES")
    slurm_gpus, slurm_from = _int_env(env, "SLURM_GPUS_ON_NODE")
    if slurm_gpus is not None:
        per_node, per_node_from = slurm_gpus, slurm_from
    elif visible not in (None, "", "NoDevFiles") and len(visible.split(",")) < len(gpus):
        per_node, per_node_from = len(visible.split(",")), "CUDA_VISIBLE_DEVICES"
    else:
        per_node, per_node_from = len(gpus), "NVML (GPUs visible to the job)"
    return {
        "nodes": nodes,
        "gpus_per_node": per_node,
        "gpus": nodes * per_node,
        "processes_per_node": _nproc(command) or 1,
        "source": {"nodes": nodes_from, "gpus_per_node": per_node_from},
    }


def recorded_shape(meta: Mapping[str, Any]) -> Shape | None:
    """The shape a run record says it ran with (None for records older than `shape`)."""
    shape = meta.get("shape")
    if isinstance(shape, dict) and _is_int(shape.get("nodes")) and _is_int(shape.get("gpus_per_node")):
        return Shape(shape["nodes"], shape["gpus_per_node"])
    return None
