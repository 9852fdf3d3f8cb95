"""The command a job runs for a given shape: one process, torchrun on one node, or torchrun per node.

Why one renderer: "identical jobs" means the same launcher everywhere. One GPU (or none)
runs the workload directly; several GPUs on one node run `torchrun --standalone
--nproc-per-node <GPUs>` (one process per GPU, NCCL on CUDA); several nodes run one
torchrun per node that meets the others at a rendezvous the scheduler names (on a
Kubeflow PyTorchJob: the operator's MASTER_ADDR, MASTER_PORT and the pod's RANK; on
Slurm: torchrun's c10d rendezvous on the allocation's first node). The command around them
is bench/in_job/command.py's `job_command`; every target renders its job with
`recorded_launch` (Slurm through bench/targets/slurm_command.py, whose rendered line the
batch script runs as is).
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.in_job.command import job_command
from bench.targets.base import JobSpec


@dataclass(frozen=True)
class Rendezvous:
    """Where the nodes of a multi-node job meet; values may be `$(VAR)` for the kubelet to expand."""

    node_rank: str
    master_addr: str
    master_port: str

    def args(self) -> list[str]:
        return [
            f"--node-rank={self.node_rank}",
            f"--master-addr={self.master_addr}",
            f"--master-port={self.master_port}",
        ]


@dataclass(frozen=True)
class C10dRendezvous:
    """torchrun's c10d rendezvous: every node meets at `endpoint` (host:port) under one id, and
    torchrun assigns the node ranks, so a scheduler that starts one launcher per node (srun)
    need not number them (https://pytorch.org/docs/stable/elastic/run.html)."""

    endpoint: str
    rdzv_id: str

    def args(self) -> list[str]:
        return ["--rdzv-backend=c10d", f"--rdzv-endpoint={self.endpoint}", f"--rdzv-id={self.rdzv_id}"]


# Kubernetes expands $(VAR) in a container's command from its environment, which is where
# the Kubeflow Training Operator puts these for every PyTorchJob pod.
PYTORCHJOB_RENDEZVOUS = Rendezvous("$(RANK)", "$(MASTER_ADDR)", "$(MASTER_PORT)")
# Kubeflow Trainer v2's torch plugin sets PET_NODE_RANK (the pod's Job completion index),
# PET_MASTER_ADDR (node 0's name under the JobSet's headless service) and PET_MASTER_PORT
# (pkg/runtime/framework/plugins/torch/torch.go); torchrun reads PET_* too, but the explicit
# arguments keep the command the same shape as every other multi-node launch.
TRAINJOB_RENDEZVOUS = Rendezvous("$(PET_NODE_RANK)", "$(PET_MASTER_ADDR)", "$(PET_MASTER_PORT)")


def launcher(
    nodes: int = 1, gpus_per_node: int = 0, rendezvous: Rendezvous | C10dRendezvous | None = None
) -> list[str]:
    """What goes between the workload's Python and its module for this shape ([] for one process)."""
    if nodes < 1 or gpus_per_node < 0:
        raise ValueError(f"a shape needs nodes >= 1 and gpus_per_node >= 0, got {nodes} x {gpus_per_node}")
    if nodes == 1 and gpus_per_node <= 1:
        return []
    per_node = f"--nproc-per-node={max(gpus_per_node, 1)}"
    if nodes == 1:
        return ["-m", "torch.distributed.run", "--standalone", per_node]
    if rendezvous is None:
        raise ValueError("a multi-node launch needs a rendezvous (node rank, master address and port)")
    return ["-m", "torch.distributed.run", f"--nnodes={nodes}", per_node, *rendezvous.args()]


def recorded_launch(
    env_name: str,
    job: JobSpec,
    run_dir: str,
    nodes: int = 1,
    gpus_per_node: int = 0,
    python: str = "python",
    rendezvous: Rendezvous | C10dRendezvous | None = None,
    recorder_options: tuple[str, ...] = (),
    recorder_python: str | None = None,
) -> list[str]:
    """`bench record` around the launch (bench/in_job/command.py's one job command), one recorder per node.

    Every target builds its job with this (local, container, Kubernetes, PyTorchJob, and
    Slurm through bench/targets/slurm_command.py). `recorder_python` (default `python`)
    starts the recorder when that differs from the workload's Python (a Singularity image)."""
    return job_command(
        env_name,
        job.experiment,
        run_dir,
        job.overrides,
        python,
        launcher(nodes, gpus_per_node, rendezvous),
        recorder_options=recorder_options,
        recorder_python=recorder_python,
    )
