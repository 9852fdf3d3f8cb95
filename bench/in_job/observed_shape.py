"""The shape this job really has, observed inside the job by the recorder (written to run.json).

Read from the scheduler (its probe: bench.in_job.scheduler), the launcher's command line
and NVML, never from env.yaml, so a record says what ran, not what was asked for.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from bench.in_job.scheduler import SchedulerProbe, probe_for


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
    gpus: list[dict[str, Any]],
    command: list[str],
    environ: Mapping[str, str] | None = None,
    scheduler: SchedulerProbe | None = None,
) -> dict[str, Any]:
    """The shape this job really has, and where each number came from.

    Nodes: the scheduler's allocation (Slurm: SLURM_JOB_NUM_NODES), else torchrun's
    `--nnodes`, else 1. GPUs per node: the scheduler's allocation (Slurm:
    SLURM_GPUS_ON_NODE), else CUDA_VISIBLE_DEVICES when NVML shows the whole node, else
    the GPUs NVML shows this job (a container sees only its allocation). Processes per
    node: torchrun's `--nproc-per-node`, else 1.
    """
    env = os.environ if environ is None else environ
    probe = scheduler or probe_for(None, env)
    nodes, nodes_from = probe.nodes(env)
    if nodes is None and _nnodes(command) is not None:
        nodes, nodes_from = _nnodes(command), "torchrun --nnodes"
    if nodes is None:
        nodes, nodes_from = 1, "default (no scheduler said otherwise)"
    visible = env.get("CUDA_VISIBLE_DEVICES")
    allocated, allocated_from = probe.gpus_per_node(env)
    if allocated is not None:
        per_node, per_node_from = allocated, allocated_from
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
