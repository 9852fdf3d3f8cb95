"""Checks of the shape an environment declares in env.yaml (`shape:`, else its kind's keys).

`bench validate` checks its values and warns when environments compared with each other
declare different shapes. Reading it (`declared_shape`) is bench.records.shape's, since
collection freezes it into the record; the shape that really ran is the record's too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.records.shape import Shape


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
