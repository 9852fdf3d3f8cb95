"""Advice from the numbers: what an admin or researcher could change.

Rules are deliberately simple and stated with the numbers they used, so a reader can
disagree: GPU below 50 % busy; GPU idle while the CPU allowance is saturated (input
bound); memory headroom against the limit; CPU threads per GPU. Runs that shared a busy
host (bench.analysis.contention) give no thread or memory advice: their CPU and memory
say as much about the other work as about the job.
"""

from __future__ import annotations

import math

from bench.analysis.compare import CompareResult
from bench.analysis.contention import contended
from bench.analysis.instrument import instrument_notes
from bench.analysis.metrics import RunMetrics, fmt
from bench.analysis.stats import median

GPU_LOW_PCT = 50.0
CPU_SATURATED = 0.85  # of the CPU allowance
MEM_TIGHT = 0.90  # of the memory limit
MEM_LOOSE = 0.25


def _med(runs: list[RunMetrics], key: str) -> float | None:
    return median([getattr(r, key) for r in runs])


def advise(result: CompareResult) -> dict[str, list[str]]:
    """env -> advice sentences (each says the number it is based on)."""
    out: dict[str, list[str]] = {}
    for env in result.envs:
        runs = [r for r in result.runs if r.env == env]
        notes: list[str] = []
        gpus = max((r.gpus for r in runs if r.gpus is not None), default=0)  # unknown (an import): as none
        util = _med(runs, "gpu_util_mean_pct")
        cpu = _med(runs, "cpu_mean_pct")
        limit = _med(runs, "cpu_limit_cores")
        cpu_frac = (cpu / 100.0) / limit if cpu is not None and limit else None
        if gpus == 0 or util is None:
            notes.append(
                "no GPU samples: GPU checks skipped (the job ran on CPU, or NVML was not available — "
                "see sampler_errors in run.json)"
            )
        else:
            if util < GPU_LOW_PCT:
                notes.append(
                    f"GPU busy only {fmt(util)} % on average (< {GPU_LOW_PCT:g} %): the GPU is under-used; "
                    "a larger batch, more data-loader workers or fewer GPUs would use it better."
                )
            if util < GPU_LOW_PCT and cpu_frac is not None and cpu_frac >= CPU_SATURATED:
                notes.append(
                    f"looks input-bound: GPU {fmt(util)} % busy while the CPU allowance is "
                    f"{fmt(cpu_frac * 100)} % used ({fmt(cpu / 100)} of {fmt(limit)} cores): "
                    "give the job more CPU cores or move preprocessing off the CPU."
                )
        gmem, gtot = _med(runs, "gpu_mem_peak_gb"), _med(runs, "gpu_mem_total_gb")
        if gmem is not None and gtot:
            notes.append(f"GPU memory: peak {fmt(gmem)} GiB of {fmt(gtot)} GiB per GPU ({fmt(gmem / gtot * 100)} %).")
        notes.extend(_resource_notes(runs, gpus))
        notes.extend(instrument_notes(runs, result.runs))
        out[env] = notes
    return out


def _resource_notes(runs: list[RunMetrics], gpus: int) -> list[str]:
    """Memory and CPU-thread advice from the runs whose host was not busy with other work."""
    quiet = [r for r in runs if contended(r) is None]
    if not quiet:
        return [
            f"no CPU thread or memory advice: all {len(runs)} run(s) shared a busy host "
            "(listed under Runs on a busy host); rerun on a quiet machine"
        ]
    notes = []
    cpu, limit = _med(quiet, "cpu_mean_pct"), _med(quiet, "cpu_limit_cores")
    rss, mem_limit, machine = _med(quiet, "peak_rss_gb"), _med(quiet, "mem_limit_gb"), _med(quiet, "host_mem_gb")
    peak = "peak host memory used (whole machine)" if any(r.from_host("peak_rss_gb") for r in quiet) else "peak RSS"
    if rss is not None and not mem_limit and machine:
        notes.append(_machine_memory_note(peak, rss, machine))
    elif rss is not None and mem_limit:
        frac = rss / mem_limit
        if frac >= MEM_TIGHT:
            notes.append(
                f"memory is tight: {peak} {fmt(rss)} GB is {fmt(frac * 100)} % of the "
                f"{fmt(mem_limit)} GB limit; raise the memory request to avoid OOM kills."
            )
        elif frac <= MEM_LOOSE:
            notes.append(
                f"memory headroom: {peak} {fmt(rss)} GB is {fmt(frac * 100)} % of the "
                f"{fmt(mem_limit)} GB available; a smaller memory request would do."
            )
        else:
            notes.append(f"memory headroom: {peak} {fmt(rss)} GB is {fmt(frac * 100)} % of {fmt(mem_limit)} GB.")
    if cpu is not None and limit:
        used = cpu / 100.0
        per = max(gpus, 1)
        suggest = max(1, min(int(limit // per), math.ceil(used / per * 1.25)))
        who = "the host (whole machine)" if any(r.from_host("cpu_mean_pct") for r in quiet) else "the job"
        notes.append(
            f"CPU threads: {who} used {fmt(used)} of {fmt(limit)} cores on average; "
            f"suggest {suggest} CPU thread(s) per {'GPU' if gpus else 'process'} "
            f"(torch.set_num_threads / data-loader workers) with {int(limit // per)} available per "
            f"{'GPU' if gpus else 'process'}."
        )
    if len(quiet) < len(runs):
        notes.append(f"thread and memory advice from {len(quiet)} of {len(runs)} runs: the others shared a busy host.")
    return notes


def _machine_memory_note(peak: str, rss: float, machine: float) -> str:
    """Memory against the machine's where the job had no memory limit (a bare process; an import,
    whose record does not say): nothing was requested, so no smaller request is advised."""
    frac = rss / machine
    if frac >= MEM_TIGHT:
        return (
            f"memory is tight: {peak} {fmt(rss)} GB is {fmt(frac * 100)} % of the machine's {fmt(machine)} GB "
            "(no memory limit recorded); a machine with more memory or a smaller batch avoids OOM kills."
        )
    return (
        f"memory: {peak} {fmt(rss)} GB is {fmt(frac * 100)} % of the machine's {fmt(machine)} GB; no memory "
        "limit recorded (a bare process, or an import that does not say), so there is no request to size."
    )
