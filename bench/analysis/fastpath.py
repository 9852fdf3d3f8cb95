"""Figures of how close a run came to its hardware: FLOPs, MFU, energy per image, compiled or not.

- achieved TFLOP/s = steady images/s x (model FLOPs per G iteration / images per G
  iteration), both counted by the workload once at start (train.jsonl `warmup`);
- MFU = achieved / (GPUs x the GPU's dense datasheet peak at the run's precision,
  `peak_flops.py`); no figure for a GPU or precision without a datasheet number;
- energy per image = the GPUs' energy (NVML's counter, else power over time) / images
  seen; images/s per W is its inverse (an image per joule is an image/s per watt);
- GPU busy in steady state: utilisation samples between the first finished iteration
  and the last train line (start-up and the end excluded).

Each function takes the metric catalogue's RunContext (`ctx[key]` for other figures).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.analysis.peak_flops import peak_tflops, unknown_peak_reason
from bench.records import contract as c
from bench.records.compile_facts import run_compile_facts

MFU_SLACK = 1e-6  # rounding of the recorded figures; anything more above 100 % is impossible


def _facts(ctx: Any) -> dict[str, Any]:
    return run_compile_facts(ctx.meta, ctx.run.train) or {}


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if np.isfinite(value) and value > 0 else None


def _gpu_model(ctx: Any) -> str | None:
    gpus = ctx.section("hardware").get("gpus")
    models = [g.get("model") for g in gpus if isinstance(g, dict)] if isinstance(gpus, list) else []
    return next((m for m in models if isinstance(m, str) and m), None)


def _precision(ctx: Any) -> str | None:
    p = _facts(ctx).get("precision")
    if not p:
        starts = ctx.run.train.of("run_start")
        p = starts[0].get("precision") if starts else None
    return p if isinstance(p, str) else None


def flops_per_g_iteration(ctx: Any) -> float | None:
    return _num(_facts(ctx).get("flops_per_g_iteration"))


def compiled(ctx: Any) -> float | None:
    """1 when the run trained on the compiled path, 0 when eagerly (fallback included), None when unknown."""
    value = _facts(ctx).get("compile")
    return None if not isinstance(value, bool) else float(value)


def achieved_tflops(ctx: Any) -> float | None:
    """Model TFLOP/s achieved; unknown (and said why) when it is not finite or above the GPUs' own peak,
    which no run can reach: FLOPs or images per G iteration are then wrong, not the GPU fast."""
    flops, per_iter, ips = (
        flops_per_g_iteration(ctx),
        _num(_facts(ctx).get("images_per_g_iteration")),
        ctx["images_per_s"],
    )
    if not (flops and per_iter and ips):
        return None
    value = ips * flops / per_iter / 1e12
    peak = ctx["peak_tflops"]
    if not np.isfinite(value) or (peak and value > peak * (1 + MFU_SLACK)):
        shown = f"{100.0 * value / peak:.4g} %" if peak and np.isfinite(value) else f"{value:g} TFLOP/s"
        why = (
            f"MFU unknown: the record gives {shown} ({ips:.4g} images/s x {flops:.4g} FLOP per G iteration / "
            f"{per_iter:g} images per G iteration), above the physical limit of 100 % of the GPUs' peak: "
            "run.json compile.flops_per_g_iteration or images_per_g_iteration is wrong"
        )
        ctx.notes["achieved_tflops"] = ctx.notes["mfu_pct"] = why
        return None
    return value


def mfu_over_limit(run: Any) -> str | None:
    """Why a record's MFU is refused as above 100 % of its GPUs' peak, for `bench check` to list;
    None when it is not. Cheap: only a record whose compile section gives both per-iteration
    counts is looked at, and only the few figures MFU needs are computed (no samples)."""
    facts = run_compile_facts(run.meta, run.train) or {}
    if not (_num(facts.get("flops_per_g_iteration")) and _num(facts.get("images_per_g_iteration"))):
        return None
    from bench.analysis.metrics import RunContext  # the catalogue imports this module

    ctx = RunContext(run)
    ctx["achieved_tflops"]
    why = ctx.notes.get("achieved_tflops", "")
    return why if "above the physical limit" in why else None


def peak_tflops_of_run(ctx: Any) -> float | None:
    """The job's GPUs' dense peak at its precision (one GPU x GPUs)."""
    model, precision = _gpu_model(ctx), _precision(ctx)
    one, gpus = peak_tflops(model, precision), ctx["gpus"]
    if not one and gpus:
        why = unknown_peak_reason(model, precision)
        if why:
            ctx.notes.setdefault("mfu_pct", why)
    return one * gpus if one and gpus else None


def mfu_pct(ctx: Any) -> float | None:
    """Achieved / peak, at most 100 % (a higher figure is refused by `achieved_tflops`)."""
    achieved, peak = ctx["achieved_tflops"], ctx["peak_tflops"]
    return min(100.0, 100.0 * achieved / peak) if achieved is not None and peak else None


def energy_per_image_j(ctx: Any) -> float | None:
    wh, seen = ctx["energy_wh"], ctx["images_seen"]
    return wh * 3600.0 / seen if wh and seen else None


def images_per_s_per_w(ctx: Any) -> float | None:
    j = ctx["energy_per_image_j"]
    return 1.0 / j if j else None


def steady_gpu_util_pct(ctx: Any) -> float | None:
    """Mean GPU utilisation of the job's GPUs between the first finished iteration and the last train line."""
    warm, trains = ctx.run.train.of("warmup"), ctx.run.train.of("train")
    if not warm or not trains:
        return None
    t0, t1 = float(warm[0]["time"]), float(trains[-1]["time"])
    parts = []
    for df in ctx.run.samples.values():
        t = df["time"].to_numpy(dtype=float)
        inside = (t >= t0) & (t <= t1)
        for g in c.job_gpu_ids(ctx.meta, df.columns):
            col = f"{g}_{c.GPU_UTIL}"
            if col in df:
                v = df[col].to_numpy(dtype=float, na_value=np.nan)[inside]
                parts.append(v[np.isfinite(v)])
    values = np.concatenate(parts) if parts else np.empty(0)
    return float(values.mean()) if values.size else None


def catalogue(metric: Any, derived: Any, higher: str, lower: str) -> tuple[Any, ...]:
    """This module's entries of the metric catalogue (`metrics.METRICS`), in summary-table order."""
    return (
        metric("mfu_pct", "MFU (model FLOPs utilisation)", "%", higher,
               derived(mfu_pct, "achieved TFLOP/s / (GPUs x datasheet dense peak at the run's precision)"),
               headline=True, in_runs_table=True),
        metric("achieved_tflops", "achieved model TFLOP/s", "TFLOP/s", higher,
               derived(achieved_tflops, "images/s x warmup.flops_per_g_iteration / images_per_g_iteration"),
               in_runs_table=True),
        metric("energy_per_image_j", "GPU energy per image", "J/img", lower,
               derived(energy_per_image_j, "GPU energy (NVML counter) / images seen"), headline=True,
               in_runs_table=True),
        metric("images_per_s_per_w", "images/s per W", "img/s/W", higher,
               derived(images_per_s_per_w, "images seen / GPU energy (J): images per joule")),
        metric("gpu_util_steady_pct", "GPU busy, steady state", "%", higher,
               derived(steady_gpu_util_pct, f"{c.GPU_UTIL} between the first iteration and the last train line")),
        metric("flops_per_g_iteration", "model FLOPs per G iteration", "FLOP", "",
               derived(flops_per_g_iteration, "train.jsonl warmup (torch.utils.flop_counter, once at start)"),
               in_summary=False),
        metric("peak_tflops", "GPUs' dense peak", "TFLOP/s", "",
               derived(peak_tflops_of_run, "bench/analysis/peak_flops.py (datasheets) x GPUs"), in_summary=False),
        metric("compiled", "compiled (1) or eager (0)", "flag", "",
               derived(compiled, "run.json compile.compile (guard passed), else train.jsonl warmup"),
               in_summary=False, in_runs_table=True, digits=1),
    )  # fmt: skip
