"""The job's resource shape as a run record holds it: nodes × GPUs per node (and CPU / memory per GPU).

Why it is part of "identical": a 4-GPU run is about 4× faster than a 1-GPU run, and a
comparison that does not say so calls that a platform difference. Three layers handle a
shape: env.yaml declares one (bench.environments.shape reads and checks it), the job
observes the one it really has (bench.in_job.observed_shape) and writes it into
`run.json` (`shape`), and analysis reads it back from the record (`recorded_shape`).
"""

from __future__ import annotations

from collections.abc import Mapping
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


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def recorded_shape(meta: Mapping[str, Any]) -> Shape | None:
    """The shape a run record says it ran with (None for records older than `shape`)."""
    shape = meta.get("shape")
    if isinstance(shape, dict) and is_int(shape.get("nodes")) and is_int(shape.get("gpus_per_node")):
        return Shape(shape["nodes"], shape["gpus_per_node"])
    return None
