"""A run that shared a busy host: its figures say as much about the other work as the platform.

Flagged when
- the whole machine's CPU was at least BUSY_HOST_PCT % busy on average while the job's own
  process tree used less than JOB_SHARE of its CPU allowance: the rest of the load was
  someone else's. Only where both are measured (the job's process tree, not host columns:
  an import of sar cannot tell the job's share from the machine's);
- or the host's CPUs were taken by the hypervisor (steal, at least STEAL_PCT % on average:
  other guests on a shared virtual machine's host) or sat waiting for I/O (iowait, at least
  IOWAIT_PCT %: a disk or network file system shared with other work), where the samples
  have those columns (the recorder's psutil, or sar's %steal and %iowait).
`bench check` and the report name such runs; the advisor gives no thread or memory advice
from them; the report shows the headline figures with and without them (`with_and_without`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.analysis.metrics import HEADLINE, RunContext, RunMetrics, fmt
from bench.analysis.stats import median
from bench.records.read import RunData

if TYPE_CHECKING:
    from bench.analysis.compare import CompareResult

BUSY_HOST_PCT = 90.0  # host CPU utilisation mean, % of all logical CPUs
JOB_SHARE = 0.5  # the job's mean CPU use below this share of its allowance
STEAL_PCT = 10.0  # mean steal, % of all logical CPUs: a tenth of the machine went to other guests
IOWAIT_PCT = 20.0  # mean iowait, % of all logical CPUs: a fifth of the machine stalled on I/O
KEYS = ("host_cpu_util_pct", "cpu_mean_pct", "cpu_limit_cores", "host_steal_pct", "host_iowait_pct")


def contended(m: RunMetrics) -> str | None:
    """Why this run's host was busy with other work, or None (not busy, or not measured)."""
    return _why(*(getattr(m, k) for k in KEYS), m.from_host("cpu_mean_pct"))


def contended_run(run: RunData) -> str | None:
    """`contended` from the figures it needs alone (`bench check` reads every record: the
    whole catalogue per run would be most of its time)."""
    ctx = RunContext(run)
    values = [ctx[k] for k in KEYS]
    return _why(*values, ctx.origins.get("cpu_mean_pct") == "host")


def _why(
    host: float | None,
    cpu: float | None,
    limit: float | None,
    steal: float | None,
    iowait: float | None,
    from_host: bool,
) -> str | None:
    reasons = []
    if host is not None and cpu is not None and limit and not from_host:
        used = cpu / 100.0
        if host >= BUSY_HOST_PCT and used < JOB_SHARE * limit:
            reasons.append(
                f"host busy with other work: the machine's CPU was {fmt(host)} % busy on average while the job used "
                f"{fmt(used)} of its {fmt(limit)} cores (under {JOB_SHARE:.0%})"
            )
    if steal is not None and steal >= STEAL_PCT:
        reasons.append(
            f"CPU taken by the hypervisor: {fmt(steal)} % steal on average (≥ {STEAL_PCT:g} %), "
            "other guests of the same physical host ran on its cores"
        )
    if iowait is not None and iowait >= IOWAIT_PCT:
        reasons.append(
            f"host waiting on I/O: {fmt(iowait)} % iowait on average (≥ {IOWAIT_PCT:g} %), "
            "its disks or file systems were slow or shared"
        )
    if not reasons:
        return None
    return "; ".join(reasons) + "; its figures are not the platform's alone"


@dataclass(frozen=True)
class BusyEffect:
    """One headline figure of one environment, its median over all compared runs and over
    the runs whose host was quiet (None when every run was busy)."""

    env: str
    metric: str
    all_median: float | None
    quiet_median: float | None
    runs: int
    quiet_runs: int


def busy_runs(result: CompareResult) -> dict[str, list[RunMetrics]]:
    """env -> its compared runs that shared a busy host (environments with none left out)."""
    out: dict[str, list[RunMetrics]] = {}
    for m in result.runs:
        if contended(m):
            out.setdefault(m.env, []).append(m)
    return out


def with_and_without(result: CompareResult) -> list[BusyEffect]:
    """Per environment with busy runs, each headline figure it measured: the median with
    every run and without the busy ones, so a reader sees how much the busy runs move it."""
    busy = busy_runs(result)
    out = []
    for env in result.envs:
        if env not in busy:
            continue
        mine = [m for m in result.runs if m.env == env]
        quiet = [m for m in mine if all(m is not b for b in busy[env])]
        for key in HEADLINE:
            values = [getattr(m, key) for m in mine]
            if all(v is None for v in values):
                continue
            out.append(
                BusyEffect(env, key, median(values), median([getattr(m, key) for m in quiet]), len(mine), len(quiet))
            )
    return out
