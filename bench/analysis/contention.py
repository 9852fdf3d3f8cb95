"""A run that shared a busy host: its figures say as much about the other work as the platform.

Flagged when the whole machine's CPU was at least BUSY_HOST_PCT % busy on average while the
job's own process tree used less than JOB_SHARE of its CPU allowance: the rest of the load
was someone else's. Only where both are measured (the job's process tree, not host columns:
an import of sar cannot tell the job's share from the machine's). `bench check` and the
report name such runs; the advisor gives no thread or memory advice from them.
"""

from __future__ import annotations

from bench.analysis.metrics import RunContext, RunMetrics, fmt
from bench.records.read import RunData

BUSY_HOST_PCT = 90.0  # host CPU utilisation mean, % of all logical CPUs
JOB_SHARE = 0.5  # the job's mean CPU use below this share of its allowance
KEYS = ("host_cpu_util_pct", "cpu_mean_pct", "cpu_limit_cores")


def contended(m: RunMetrics) -> str | None:
    """Why this run's host was busy with other work, or None (not busy, or not measured)."""
    return _why(*(getattr(m, k) for k in KEYS), m.from_host("cpu_mean_pct"))


def contended_run(run: RunData) -> str | None:
    """`contended` from the three figures it needs alone (`bench check` reads every record:
    the whole catalogue per run would be most of its time)."""
    ctx = RunContext(run)
    values = [ctx[k] for k in KEYS]
    return _why(*values, ctx.origins.get("cpu_mean_pct") == "host")


def _why(host: float | None, cpu: float | None, limit: float | None, from_host: bool) -> str | None:
    if host is None or cpu is None or not limit or from_host:
        return None
    used = cpu / 100.0
    if host < BUSY_HOST_PCT or used >= JOB_SHARE * limit:
        return None
    return (
        f"host busy with other work: the machine's CPU was {fmt(host)} % busy on average while the job used "
        f"{fmt(used)} of its {fmt(limit)} cores (under {JOB_SHARE:.0%}); its figures are not the platform's alone"
    )
