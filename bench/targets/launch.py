"""The command a job runs for a given shape: one process, torchrun on one node, or torchrun per node.

Why one renderer: "identical jobs" means the same launcher everywhere. One GPU (or none)
runs the workload directly; several GPUs on one node run `torchrun --standalone
--nproc-per-node <GPUs>` (one process per GPU, NCCL on CUDA); several nodes run one
torchrun per node that meets the others at a rendezvous the scheduler names (on a
Kubeflow PyTorchJob: the operator's MASTER_ADDR, MASTER_PORT and the pod's RANK). The
Slurm batch script (ansible/roles/atlas/templates/job.sbatch.j2) picks the same launchers,
and the command around them is bench/in_job/command.py's `job_command`, the one every target runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.in_job.command import job_command, workload_command
from bench.targets.base import JobSpec


@dataclass(frozen=True)
class Rendezvous:
    """Where the nodes of a multi-node job meet; values may be `$(VAR)` for the kubelet to expand."""

    node_rank: str
    master_addr: str
    master_port: str


# Kubernetes expands $(VAR) in a container's command from its environment, which is where
# the Kubeflow Training Operator puts these for every PyTorchJob pod.
PYTORCHJOB_RENDEZVOUS = Rendezvous("$(RANK)", "$(MASTER_ADDR)", "$(MASTER_PORT)")


def launcher(nodes: int = 1, gpus_per_node: int = 0, rendezvous: Rendezvous | None = None) -> list[str]:
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
    return [
        "-m", "torch.distributed.run", f"--nnodes={nodes}", per_node, f"--node-rank={rendezvous.node_rank}",
        f"--master-addr={rendezvous.master_addr}", f"--master-port={rendezvous.master_port}",
    ]  # fmt: skip


def launch_command(
    job: JobSpec,
    run_dir: str,
    nodes: int = 1,
    gpus_per_node: int = 0,
    python: str = "python",
    rendezvous: Rendezvous | None = None,
) -> list[str]:
    """The workload's command line for `nodes` × `gpus_per_node` (without the recorder)."""
    return workload_command(job.experiment, run_dir, job.overrides, python, launcher(nodes, gpus_per_node, rendezvous))


def recorded_launch(
    env_name: str,
    job: JobSpec,
    run_dir: str,
    nodes: int = 1,
    gpus_per_node: int = 0,
    python: str = "python",
    rendezvous: Rendezvous | None = None,
    recorder_options: tuple[str, ...] = (),
) -> list[str]:
    """`bench record` around the launch (bench/in_job/command.py's one job command), one recorder per node.

    Every target builds its job with this (local, container, Kubernetes, PyTorchJob); the
    Slurm batch script runs bench/in_job/command.py, which builds the same command in the job."""
    return job_command(
        env_name,
        job.experiment,
        run_dir,
        job.overrides,
        python,
        launcher(nodes, gpus_per_node, rendezvous),
        recorder_options=recorder_options,
    )
