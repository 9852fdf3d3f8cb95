"""Slurm: the job id and this node's rank from the variables Slurm sets in every job step
(https://slurm.schedmd.com/sbatch.html#SECTION_OUTPUT-ENVIRONMENT-VARIABLES)."""

from __future__ import annotations

from collections.abc import Mapping

from bench.in_job.scheduler import int_env, int_or_zero


class Probe:
    name = "slurm"
    # A plain scancel TERMs every process of the job at once; the batch script decides that it
    # was a cancel (not a requeue) only after asking scontrol, then writes RUN_DIR/CANCELLED
    # (ansible/roles/atlas/templates/job.sbatch.j2). A workload that checkpointed on that TERM
    # may end first: the recorder waits this long for the mark before calling it a preemption.
    cancel_mark_wait_s = 5.0

    def job_id(self, environ: Mapping[str, str]) -> str | None:
        return environ.get("SLURM_JOB_ID") or None

    def node_rank(self, environ: Mapping[str, str]) -> int:
        return int_or_zero(environ.get("SLURM_NODEID", "0"))

    def nodes(self, environ: Mapping[str, str]) -> tuple[int | None, str | None]:
        return int_env(environ, "SLURM_JOB_NUM_NODES", "SLURM_NNODES")

    def gpus_per_node(self, environ: Mapping[str, str]) -> tuple[int | None, str | None]:
        return int_env(environ, "SLURM_GPUS_ON_NODE")

    def host(self, environ: Mapping[str, str]) -> str:
        from bench.in_job.provenance import hostname

        return hostname()
