"""Telemetry cross-checks: where two sources for one figure disagree, or where a figure
means less than it seems.

A figure read from one source is trusted blindly; two that should agree and do not
point at a monitoring fault (a sampler reading the wrong GPU, an energy plugin measuring
something else). Checked per run, each finding one line for the report:

- GPU utilisation: the recorder's NVML samples vs Slurm's accounting (`sacct`
  TRESUsageInAve gres/gpuutil, bench.targets.slurm_accounting). Both are whole percent,
  but they are sampled at different instants (Slurm every JobAcctGatherFrequency, 30 s
  by default), so they must agree within `UTIL_TOLERANCE_PCT` points. How Slurm's GPU
  plugin combines several GPUs (sum or mean) is not documented, so a multi-GPU job
  disagrees only when it matches neither.
- Energy: the GPUs' NVML energy counter vs Slurm's ConsumedEnergy, which is whatever the
  site's energy plugin measures (the GPUs alone with acct_gather_energy/gpu, the node with
  ipmi): a difference beyond `ENERGY_TOLERANCE` is printed with that caveat.
- "Busy, not computing": GPU utilisation (a kernel was running, `DCGM_FI_DEV_GPU_UTIL`)
  at or above `BUSY_PCT` while SM activity (`DCGM_FI_PROF_SM_ACTIVE`, the share of SMs
  with a warp) is below `SM_ACTIVE_LOW`: the GPU looks busy and mostly idles
  (https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/feature-overview.html#profiling-metrics).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.analysis.metrics import RunContext, Samples, fmt
from bench.records import contract as c
from bench.records.read import RunData

UTIL_TOLERANCE_PCT = 10.0  # points: two whole-percent sources sampled at different instants
ENERGY_TOLERANCE = 0.10  # relative: beyond both counters' resolution (mJ, J) on any real run
BUSY_PCT = 80.0
SM_ACTIVE_LOW = 0.5
SM_ACTIVE = Samples(c.GPU_SM_ACTIVE, "mean", "pool", per_gpu=True)


@dataclass(frozen=True)
class Finding:
    env: str
    run_id: str
    kind: str  # "gpu_util", "energy" or "busy_not_computing"
    text: str

    def line(self) -> str:
        return f"{self.env}/{self.run_id}: {self.text}"


def _accounting(meta: dict[str, Any]) -> dict[str, Any]:
    sched = meta.get("scheduler") if isinstance(meta.get("scheduler"), dict) else {}
    block = sched.get("accounting")
    return block if isinstance(block, dict) else {}


def _number(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return float(value) if ok else None


def _gpu_util(ctx: RunContext, acct: dict[str, Any]) -> str | None:
    sampled, slurm, gpus = ctx["gpu_util_mean_pct"], _number(acct.get("gpu_util_mean_pct")), ctx["gpus"] or 1
    if sampled is None or slurm is None:
        return None
    readings = {sampled} if gpus <= 1 else {sampled, sampled * gpus}  # mean over GPUs, or their sum
    if min(abs(slurm - r) for r in readings) <= UTIL_TOLERANCE_PCT:
        return None
    return (
        f"GPU utilisation disagrees: {fmt(sampled)} % sampled (NVML, mean over {gpus:.0f} GPU(s)) vs "
        f"{fmt(slurm)} % in Slurm's accounting (sacct gres/gpuutil), beyond ±{fmt(UTIL_TOLERANCE_PCT)} points"
    )


def _energy(ctx: RunContext, acct: dict[str, Any]) -> str | None:
    sampled, joules = ctx["energy_wh"], _number(acct.get("energy_j"))
    if sampled is None or joules is None:
        return None
    slurm = joules / 3600.0
    if abs(slurm - sampled) <= ENERGY_TOLERANCE * max(slurm, sampled):
        return None
    return (
        f"energy disagrees: {fmt(sampled)} Wh from the GPUs' NVML counter vs {fmt(slurm)} Wh Slurm "
        f"ConsumedEnergy ({(slurm - sampled) / sampled:+.0%}; Slurm's figure is what its energy plugin "
        "measures, e.g. the whole node)"
    )


def _busy_not_computing(ctx: RunContext) -> str | None:
    util, active = ctx["gpu_util_mean_pct"], SM_ACTIVE.value(ctx)
    if util is None or active is None or util < BUSY_PCT or active >= SM_ACTIVE_LOW:
        return None
    return (
        f"busy, not computing: GPU utilisation {fmt(util)} % but SM activity {fmt(active)} "
        f"(under {SM_ACTIVE_LOW}): kernels were running while most SMs had no work"
    )


def cross_check(run: RunData) -> list[Finding]:
    """The findings of one run, in a fixed order (none when its sources agree or are absent)."""
    ctx = RunContext(run)
    acct = _accounting(run.meta)
    checks = (("gpu_util", _gpu_util(ctx, acct)), ("energy", _energy(ctx, acct)))
    checks += (("busy_not_computing", _busy_not_computing(ctx)),)
    return [Finding(run.env, run.run_id, kind, text) for kind, text in checks if text]


def cross_check_runs(runs: list[RunData]) -> list[Finding]:
    """Every finding over `runs`, ordered by environment and run: one report line each."""
    return [f for run in sorted(runs, key=lambda r: (r.env, r.run_id)) for f in cross_check(run)]
