"""One row of figures per run, computed from its record only.

Every figure is None when the record cannot support it (and `records.load_run` has
already said why), so one damaged run never hides the others.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from bench.analysis.cost import run_cost
from bench.records.read import RunData
from bench.records.trainlog import images_seen, outcome, steady_images_per_s, time_to_train

GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
GPU_FB_USED = "DCGM_FI_DEV_FB_USED"
GPU_FB_TOTAL = "DCGM_FI_DEV_FB_TOTAL"
GPU_POWER = "DCGM_FI_DEV_POWER_USAGE"
GPU_ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"


@dataclass
class RunMetrics:
    env: str
    run_id: str
    status: str | None
    git_sha: str | None
    config_sha256: str | None
    start_time: float | None
    wall_s: float | None
    time_to_train_s: float | None
    images_per_s: float | None  # steady-state median
    images_per_s_iqr: float | None
    images_seen: float | None
    cpu_mean_pct: float | None  # process tree, % of one core
    cpu_p95_pct: float | None
    cpu_limit_cores: float | None  # what the job could use (cgroup, else host)
    peak_rss_gb: float | None
    mem_limit_gb: float | None
    gpus: int
    gpu_util_mean_pct: float | None
    gpu_mem_peak_gb: float | None
    gpu_mem_total_gb: float | None
    energy_wh: float | None
    cost_usd: float | None
    cost_per_1000_images_usd: float | None
    cost_note: str
    queue_wait_s: float | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _f(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if np.isfinite(value) else None


def _col(df: pd.DataFrame, name: str) -> np.ndarray:
    if name not in df.columns:
        return np.empty(0)
    arr = df[name].to_numpy(dtype=float, na_value=np.nan)
    return arr[np.isfinite(arr)]


def gpu_ids(df: pd.DataFrame) -> list[str]:
    """The `gpuN` prefixes present in a samples frame, in order."""
    ids = sorted(
        {c.split("_", 1)[0] for c in df.columns if c.startswith("gpu") and "_DCGM_" in c},
        key=lambda g: int(g[3:]) if g[3:].isdigit() else 0,
    )
    return ids


def _gpu_energy_wh(df: pd.DataFrame, gpu: str) -> float | None:
    counter = df[f"{gpu}_{GPU_ENERGY}"].to_numpy(dtype=float, na_value=np.nan) if f"{gpu}_{GPU_ENERGY}" in df else None
    if counter is not None:
        ok = counter[np.isfinite(counter)]
        if ok.size >= 2 and ok[-1] >= ok[0]:
            return float(ok[-1] - ok[0]) / 3.6e6  # mJ -> Wh
    if f"{gpu}_{GPU_POWER}" in df:
        t = df["time"].to_numpy(dtype=float)
        p = df[f"{gpu}_{GPU_POWER}"].to_numpy(dtype=float, na_value=np.nan)
        ok = np.isfinite(p)
        if ok.sum() >= 2:
            return float(np.trapezoid(p[ok], t[ok])) / 3600.0  # W*s -> Wh
    return None


def run_metrics(run: RunData, cost_cfg: dict[str, Any] | None = None) -> RunMetrics:
    meta = run.meta
    ttt, _ = time_to_train(run.train)
    rates = steady_images_per_s(run.train)
    ips = float(np.median(rates)) if rates.size else None
    iqr = float(np.subtract(*np.percentile(rates, [75, 25]))) if rates.size else None

    cpu_means, cpu_p95s, rss_peaks = [], [], []
    gpu_util: list[np.ndarray] = []
    gpu_mem_peak, gpu_mem_total, energy = [], [], []
    ngpus = 0
    for df in run.samples.values():
        cpu = _col(df, "proc_cpu_percent")
        if cpu.size:
            cpu_means.append(cpu.mean())
            cpu_p95s.append(np.percentile(cpu, 95))
        rss = _col(df, "proc_rss_bytes")
        if rss.size:
            rss_peaks.append(rss.max())
        for g in gpu_ids(df):
            ngpus += 1
            u = _col(df, f"{g}_{GPU_UTIL}")
            if u.size:
                gpu_util.append(u)
            m = _col(df, f"{g}_{GPU_FB_USED}")
            if m.size:
                gpu_mem_peak.append(m.max())
            tot = _col(df, f"{g}_{GPU_FB_TOTAL}")
            if tot.size:
                gpu_mem_total.append(tot.max())
            e = _gpu_energy_wh(df, g)
            if e is not None:
                energy.append(e)
    if not ngpus:
        hw_gpus = (meta.get("hardware") or {}).get("gpus") if isinstance(meta.get("hardware"), dict) else None
        ngpus = len(hw_gpus) if isinstance(hw_gpus, list) else 0

    hw = meta.get("hardware") if isinstance(meta.get("hardware"), dict) else {}
    cg = hw.get("cgroup") if isinstance(hw.get("cgroup"), dict) else {}
    cpu_limit = _f(cg.get("cpu_limit_cores")) or _f(hw.get("cpu_affinity_cores")) or _f(hw.get("cpu_cores_logical"))
    mem_limit = _f(cg.get("memory_limit_bytes")) or _f(hw.get("memory_bytes"))

    start, end = _f(meta.get("start_time")), _f(meta.get("end_time"))
    wall = end - start if start is not None and end is not None else None
    if wall is None and run.samples:
        spans = [float(df["time"].iloc[-1] - df["time"].iloc[0]) for df in run.samples.values() if len(df) > 1]
        wall = max(spans) if spans else None
    sched = meta.get("scheduler") if isinstance(meta.get("scheduler"), dict) else {}
    hosts = meta.get("hosts") if isinstance(meta.get("hosts"), list) else list(run.samples)
    energy_wh = float(sum(energy)) if energy else None
    cost = run_cost(cost_cfg, wall, ngpus, max(len(hosts), 1), energy_wh, cpu_limit)
    seen = images_seen(run.train)
    exit_info = meta.get("exit") if isinstance(meta.get("exit"), dict) else {}
    status = exit_info.get("status") or outcome(run.train)
    return RunMetrics(
        env=run.env,
        run_id=run.run_id,
        status=str(status) if status else None,
        git_sha=run.git_sha,
        config_sha256=run.config_sha256,
        start_time=run.start_time,
        wall_s=wall,
        time_to_train_s=ttt,
        images_per_s=ips,
        images_per_s_iqr=iqr,
        images_seen=seen,
        cpu_mean_pct=float(np.mean(cpu_means)) * len(cpu_means) if cpu_means else None,
        cpu_p95_pct=float(np.sum(cpu_p95s)) if cpu_p95s else None,
        cpu_limit_cores=cpu_limit,
        peak_rss_gb=float(np.sum(rss_peaks)) / 1e9 if rss_peaks else None,
        mem_limit_gb=mem_limit / 1e9 if mem_limit else None,
        gpus=ngpus,
        gpu_util_mean_pct=float(np.mean(np.concatenate(gpu_util))) if gpu_util else None,
        gpu_mem_peak_gb=float(max(gpu_mem_peak)) / 1024 if gpu_mem_peak else None,
        gpu_mem_total_gb=float(max(gpu_mem_total)) / 1024 if gpu_mem_total else None,
        energy_wh=energy_wh,
        cost_usd=cost.usd,
        cost_per_1000_images_usd=(cost.usd / seen * 1000) if cost.usd is not None and seen else None,
        cost_note=cost.note,
        queue_wait_s=_f(sched.get("queue_wait_s")),
    )
