"""The environment's facts a run record keeps: what env.yaml said when the run was placed.

Collection and import compute these here and hand them to bench.records.place, so the
record's layer reads no env.yaml. Reports read the record's copy, never clusters/, so a
rate edited after collection reprices nothing already collected.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

from bench import __version__
from bench.environments.load import Environment
from bench.environments.shape import declared_shape


def environment_facts(env: Environment, now: float | None = None) -> dict[str, Any]:
    """What `clusters/<env>/env.yaml` says about the environment, frozen into the record.

    Reports read these, never clusters/, so a rate edited after collection reprices
    nothing already collected; `price_source` names the file and its content hash.
    `shape` is the shape env.yaml asked for; the record's own `shape` (the recorder's,
    from the scheduler and the pod) is the one that ran, and bench.records.place.freeze
    keeps both.
    """
    path = env.folder / "env.yaml"
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
        source = f"clusters/{env.name}/env.yaml (sha256 {digest})"
    except OSError:
        source = None
    cost = env.get("cost")
    hardware = env.get("hardware")
    gpus = hardware.get("gpus_per_node") if isinstance(hardware, dict) else None
    if isinstance(cost, dict) and cost.get("model") == "onprem" and "gpus_per_node" not in cost:
        if isinstance(gpus, int) and not isinstance(gpus, bool) and gpus > 0:
            cost = {**cost, "gpus_per_node": gpus}  # the node's GPUs are written once, under hardware:
    return {
        "name": env.name,
        "kind": env.kind,
        "description": env.get("description"),
        "hardware": hardware if isinstance(hardware, dict) else None,
        "shape": shape.as_dict() if (shape := declared_shape(env.settings)) is not None else None,
        "cost": cost if isinstance(cost, dict) else None,
        "price_source": source,
        "collected_at": round(time.time() if now is None else now, 3),
        "collected_by": f"bench {__version__}",
    }
