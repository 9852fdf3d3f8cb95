"""No scheduler (a process or a container on this machine): bench itself names the job."""

from __future__ import annotations

from collections.abc import Mapping


class Probe:
    name = "plain"
    cancel_mark_wait_s = 0.0  # no batch script decides a cancel after the TERM

    def job_id(self, environ: Mapping[str, str]) -> str | None:
        return environ.get("ATLAS_JOB_ID") or None  # the container's name, when bench set one

    def node_rank(self, environ: Mapping[str, str]) -> int:
        return 0

    def nodes(self, environ: Mapping[str, str]) -> tuple[int | None, str | None]:
        return None, None

    def gpus_per_node(self, environ: Mapping[str, str]) -> tuple[int | None, str | None]:
        return None, None

    def host(self, environ: Mapping[str, str]) -> str:
        from bench.in_job.provenance import hostname

        return hostname()
