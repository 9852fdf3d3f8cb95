"""Is the job a fair instrument? Notes for when a comparison may measure the job, not the platform.

A platform comparison assumes the job keeps the GPU busy the same way everywhere. Where
the GPU idles in steady state (< 80 % busy) the job's host side (input, launches,
synchronisation) sets the pace, and where a run's MFU is far below the best recorded
run on the same GPU (same peak: model and precision) something in the job, not the
platform, held it back. Compiled and eager runs differ by the job's own code path, so a
comparison that mixes them says so.
"""

from __future__ import annotations

from bench.analysis.metrics import RunMetrics, fmt
from bench.analysis.stats import median

BUSY_MIN_PCT = 80.0
MFU_FAR_BELOW = 0.5  # of the best recorded run on the same GPU


def _med(runs: list[RunMetrics], key: str) -> float | None:
    return median([r.values.get(key) for r in runs])


def instrument_notes(env_runs: list[RunMetrics], all_runs: list[RunMetrics]) -> list[str]:
    """Sentences for one environment's runs; `all_runs` gives the best MFU per GPU peak."""
    notes: list[str] = []
    mfu_now, tflops, joules = (_med(env_runs, k) for k in ("mfu_pct", "achieved_tflops", "energy_per_image_j"))
    if mfu_now is not None or joules is not None:
        parts = [f"MFU {fmt(mfu_now)} % of the GPUs' dense peak ({fmt(tflops)} TFLOP/s achieved)"] if mfu_now else []
        parts += [f"{fmt(joules)} J of GPU energy per image"] if joules else []
        notes.append("how close to the hardware: " + "; ".join(parts) + ".")
    notes += list(dict.fromkeys(r.notes["mfu_pct"] for r in env_runs if r.notes.get("mfu_pct")))[:3]
    busy = _med(env_runs, "gpu_util_steady_pct")
    if busy is not None and busy < BUSY_MIN_PCT:
        notes.append(
            f"instrument check: GPU busy {fmt(busy)} % in steady state (< {BUSY_MIN_PCT:g} %): the job, not the GPU, "
            "sets the pace (input, launches, host), so a comparison may measure the job rather than the platform."
        )
    mfu, peak = _med(env_runs, "mfu_pct"), _med(env_runs, "peak_tflops")
    if mfu is not None and peak is not None:
        same_gpu = [
            v for r in all_runs if (v := r.values.get("mfu_pct")) is not None and r.values.get("peak_tflops") == peak
        ]
        best = max(same_gpu, default=None)
        if best and mfu < MFU_FAR_BELOW * best:
            notes.append(
                f"instrument check: MFU {fmt(mfu)} % is far below the best recorded run on the same GPU "
                f"({fmt(best)} %): a comparison may measure the job rather than the platform."
            )
    return notes


def mixed_compile_note(runs: list[RunMetrics]) -> list[str]:
    """One sentence when compiled and eager runs are compared together, naming the eager ones."""
    eager = sorted({f"{r.env}/{r.run_id}" for r in runs if r.values.get("compiled") == 0})
    if not eager or not any(r.values.get("compiled") == 1 for r in runs):
        return []
    shown = ", ".join(eager[:5]) + (f" and {len(eager) - 5} more" if len(eager) > 5 else "")
    return [
        f"compiled and eager runs are mixed in this comparison: {shown} trained eagerly (no torch.compile, or its "
        "guard refused the compiled path); their differences include the job's code path, not only the platform."
    ]
