"""The GPU proof's recorded-run cell (`bench run --env local` under a limit) and the figures
the proof reads from its record: busy, GPM activity, MFU, energy two ways, compile facts and
the layer profile's GPU side.

Read from the run record as `bench report` reads it, so a kept evidence folder can be read
again without a GPU: `python benchmarks/gpu_proof_record.py <run folder>` prints the figures.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RECORD_FILES = ("run.json", "train.jsonl", "profile.json")  # plus samples-<host>.csv; checkpoints stay out


def record_cell(cell: Any, limit: float, row: dict[str, Any], env: dict[str, str], cache: Path, out: Path) -> dict:
    """`bench run --env local` within `limit` s; its record copied to out/<variant>/, its figures in the row."""
    with tempfile.TemporaryDirectory(prefix="gpu-proof-run-") as tmp:
        runs, results = Path(tmp) / "runs", Path(tmp) / "results"
        env = dict(env, ATLAS_RUNS_DIR=str(runs))
        cmd = [
            sys.executable,
            "-m",
            "bench",
            "run",
            "--env",
            "local",
            "--experiment",
            cell.preset,
            "--results",
            str(results),
            "--timeout",
            str(max(limit - 20, 5)),
        ]
        for item in [*cell.overrides, f"runtime.compile_cache_dir={cache}"]:
            cmd += ["--set", item]
        t0 = time.time()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=limit, env=env, cwd=REPO)
            code, tail = proc.returncode, (proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines()[-1]
        except subprocess.TimeoutExpired:
            code, tail = None, f"timed out after {limit:.0f} s"
        if code != 0:  # a job still running past the limit is stopped: the next cell needs the GPU
            subprocess.run(
                [sys.executable, "-m", "bench", "cancel", "--env", "local", "--all"],
                env=env,
                cwd=REPO,
                capture_output=True,
                timeout=60,
            )
        row = {**row, "overrides": cell.overrides, "process_s": round(time.time() - t0, 1)}
        found = sorted(results.glob("local/*/run.json"))
        if not found:
            return {**row, "error": f"exit {code}: {tail[:300]}"}
        dest = out / row["variant"]
        dest.mkdir(parents=True, exist_ok=True)
        for f in [*(found[-1].parent / n for n in RECORD_FILES), *found[-1].parent.glob("samples-*.csv")]:
            if f.is_file():
                shutil.copy2(f, dest / f.name)
        row.update(record_figures(dest), record=dest.name, bench_run_exit=code)
    if code != 0:
        row["error"] = f"bench run exit {code}: {tail[:300]}"
    return row


def energy_j(samples: list[Any], gpus_of: Any) -> dict[str, Any]:
    """The job GPUs' energy twice: NVML's counter (its increases) and power integrated over
    time; a third estimate (median power x time) names the outlier when the two disagree."""
    import numpy as np

    counter = power = robust = 0.0
    have_counter = have_power = False
    for df in samples:
        t = df["time"].to_numpy(dtype=float)
        for g in gpus_of(df.columns):
            col = f"{g}_DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
            if col in df:
                v = df[col].to_numpy(dtype=float, na_value=np.nan)
                v = v[np.isfinite(v)]
                if v.size >= 2:
                    steps = np.diff(v)
                    counter, have_counter = counter + float(steps[steps > 0].sum()) / 1000.0, True
            col = f"{g}_DCGM_FI_DEV_POWER_USAGE"
            if col in df:
                p = df[col].to_numpy(dtype=float, na_value=np.nan)
                ok = np.isfinite(p)
                if ok.sum() >= 2:
                    power, have_power = power + float(np.trapezoid(p[ok], t[ok])), True
                    robust += float(np.median(p[ok])) * float(t[ok][-1] - t[ok][0])
    return {
        "counter_j": round(counter, 3) if have_counter else None,
        "power_j": round(power, 3) if have_power else None,
        "median_power_j": round(robust, 3) if have_power else None,
    }


def record_figures(run_dir: Path) -> dict[str, Any]:
    """What the proof reads from a recorded run: busy, GPM activity, MFU, J/image both ways, compile facts."""
    import numpy as np

    from bench.analysis.metrics import run_metrics
    from bench.records import contract as c
    from bench.records.compile_facts import run_compile_facts
    from bench.records.read import load_run

    run = load_run(run_dir)
    m = run_metrics(run).values
    facts = run_compile_facts(run.meta, run.train) or {}
    out: dict[str, Any] = {
        k: m.get(k)
        for k in (
            "images_per_s",
            "gpu_util_steady_pct",
            "gpu_util_mean_pct",
            "mfu_pct",
            "achieved_tflops",
            "startup_s",
            "images_seen",
        )
    }
    for key in ("compile", "compile_guard", "graph_breaks", "recompiles", "compile_mode"):
        out[key] = facts.get(key)
    starts = run.train.of("warmup")  # the cache's state is the workload's, not in run.json's compile facts
    out["compile_cache"] = starts[-1].get("compile_cache") if starts else None
    frames = list(run.samples.values())
    for name, column in (("sm_active", "DCGM_FI_PROF_SM_ACTIVE"), ("tensor_active", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")):
        vals = [
            df[f"{g}_{column}"].to_numpy(dtype=float, na_value=np.nan)
            for df in frames
            for g in c.job_gpu_ids(run.meta, df.columns)
            if f"{g}_{column}" in df
        ]
        flat = np.concatenate(vals) if vals else np.empty(0)
        flat = flat[np.isfinite(flat)]
        out[name] = round(float(flat.mean()), 4) if flat.size else None
    energy = energy_j(frames, lambda cols: c.job_gpu_ids(run.meta, cols))
    seen = out.get("images_seen")
    for key, value in energy.items():
        out[key.replace("_j", "_j_per_image")] = round(value / seen, 6) if value is not None and seen else None
    out["exit_code"] = (run.meta.get("exit") or {}).get("code")
    out.update(profile_figures(run.profile))
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in out.items()}


def profile_figures(profile: dict[str, Any] | None) -> dict[str, Any]:
    """What the proof reads from the run's layer profile (profile.json, issue 37): whether the
    window ran, with which activities, and the device time it charged to G and D as wholes.
    On a GPU this is the only place the profile's CUDA side is measured."""
    if not isinstance(profile, dict):
        return {"profile": "absent (no readable profile.json)"}
    if profile.get("skipped"):
        return {"profile": f"skipped: {profile['skipped']}"}
    modules = profile.get("modules") or {}

    def device_ms(name: str) -> float | None:
        parts = [(modules.get(name) or {}).get(kind) or {} for kind in ("forward", "backward")]
        values = [p["device_us"] for p in parts if isinstance(p.get("device_us"), (int, float))]
        return round(sum(values) / 1000, 3) if values else None

    top = profile.get("top_operators") or [{}]
    return {
        "profile": "recorded",
        "profile_device": profile.get("device"),
        "profile_activities": profile.get("activities"),
        "profile_iterations": (profile.get("iterations") or {}).get("count"),
        "profile_window_s": profile.get("window_s"),
        "profile_modules": len(modules),
        "profile_g_device_ms": device_ms("G"),
        "profile_d_device_ms": device_ms("D"),
        "profile_top_operator": top[0].get("name"),
    }


if __name__ == "__main__":
    print(json.dumps(record_figures(Path(sys.argv[1])), indent=2))
