"""Kubernetes (and OpenShift): the pod's name is the job's id; a PyTorchJob's Training
Operator gives each pod its node rank as RANK, a Kubeflow Trainer v2 TrainJob as
PET_NODE_RANK (bench record runs outside torchrun, whose workers get their own RANK)."""

from __future__ import annotations

import socket
from collections.abc import Mapping

from bench.in_job.scheduler import int_or_zero


class Probe:
    name = "kubernetes"
    cancel_mark_wait_s = 0.0  # no batch script decides a cancel after the TERM

    def job_id(self, environ: Mapping[str, str]) -> str | None:
        return environ.get("POD_NAME") or environ.get("HOSTNAME") or socket.gethostname()

    def node_rank(self, environ: Mapping[str, str]) -> int:
        return int_or_zero(environ.get("PET_NODE_RANK") or environ.get("RANK", "0"))

    def nodes(self, environ: Mapping[str, str]) -> tuple[int | None, str | None]:
        return None, None  # a PyTorchJob's torchrun --nnodes says it (bench.in_job.observed_shape)

    def gpus_per_node(self, environ: Mapping[str, str]) -> tuple[int | None, str | None]:
        return None, None  # the pod sees only its GPUs: NVML's count is the allocation

    def host(self, environ: Mapping[str, str]) -> str:
        """The pod's hostname: HOSTNAME, which the container runtime sets to it (a JobSet pod's is
        `<job>-<index>`), else the kernel's."""
        return environ.get("HOSTNAME") or socket.gethostname()
