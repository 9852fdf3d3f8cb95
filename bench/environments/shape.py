"""The shape an environment declares in env.yaml (`shape:`, else its kind's keys): read and checked.

`bench validate` checks its values and warns when environments compared with each other
declare different shapes. Collection freezes the declared shape into the record's
environment facts (bench.environments.facts); the `Shape` value and the shape that really
ran are the record's (bench.records.shape).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.records.shape import Shape, is_int


def declared_shape(settings: Mapping[str, Any]) -> Shape | None:
    """The shape env.yaml declares: `shape:`, else the kind's own keys (slurm:, hardware:)."""
    shape = settings.get("shape")
    if isinstance(shape, dict) and is_int(shape.get("nodes")) and is_int(shape.get("gpus_per_node")):
        return Shape(shape["nodes"], shape["gpus_per_node"], shape.get("cpus_per_gpu"), shape.get("memory_gib_per_gpu"))
    slurm = settings.get("slurm") if isinstance(settings.get("slurm"), dict) else {}
    hardware = settings.get("hardware") if isinstance(settings.get("hardware"), dict) else {}
    nodes = slurm.get("nodes", 1)
    gpus = slurm.get("gpus_per_node", hardware.get("gpus_per_job", hardware.get("gpus_per_node", 0)))
    if is_int(nodes) and is_int(gpus):
        return Shape(nodes, gpus)
    return None


def check_shape(settings: Mapping[str, Any], where: str) -> list[str]:
    """Problems of the values in env.yaml's `shape:` (absent is fine: the kind's own keys
    then say it); which keys may appear is bench.environments.schema's allow-list."""
    shape = settings.get("shape")
    if shape is None:
        return []
    if not isinstance(shape, dict):
        return [f"{where}: shape must be a mapping (nodes, gpus_per_node, cpus_per_gpu, memory_gib_per_gpu)"]
    from bench.environments.limits import (
        shape_problems,  # unknown keys: the kind's schema (bench.environments.schema) names them
    )

    return shape_problems(shape, where)


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
