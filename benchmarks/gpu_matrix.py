"""GPU throughput matrix: each preset x {default, eager, fp32, deterministic}, optionally vs the reference.

    python benchmarks/gpu_matrix.py [--presets cifar,imagenet128] [--variants default,fp32] \\
        [--iters 20] [--warmup 5] [--startup] [--out matrix.jsonl]
    REF_DIR=<extracted ajbrock/BigGAN-PyTorch> python benchmarks/gpu_matrix.py --ref-script ref_biggan_gpu.py

Every cell is one `benchmarks/train_throughput.py` process (fresh CUDA context, its own
peak-memory figure, NVML GPU-busy % sampled while timing), so the cells do not disturb
each other. The imagenet presets run with accumulate 1 and ortho_reg 0, as the
reference launch scripts time them. Variants: `default` (the CUDA defaults: compile,
CUDA graphs for small models, bf16, channels_last), `eager` (runtime.compile=false),
`fp32` (fp32 and no channels_last; compile as default), `deterministic`
(runtime.deterministic=true), `accumulate8` (8 micro-batches per step: compare images/s
with `default`). `--startup` runs `default` a second time on the compiler cache the
first one filled: start-up cold vs warm.

With `--ref-script` (a script printing one JSON line with `g_iters_per_s`, taking
`CONFIG ITERS WARMUP`, such as the reference timing tool that times ajbrock/BigGAN-PyTorch
found in `REF_DIR`) the reference runs in the same invocation on the same GPU and each
Atlas cell gets its ratio to it. Prints one JSON line per cell as it finishes, then a
Markdown table. With REF_DIR and a reference script it then prints PASS / FAIL per target
(`verdicts`: speed-ups over the reference, GPU busy, memory, cold and warm start, MFU) and
exits 1 when a target fails or has no figure. Without a CUDA GPU it says so in one line
and exits 0, or 1 on a machine that has an NVIDIA GPU but a torch without CUDA.

`--tiny` runs it at a size that takes seconds, to check it still works (make test runs it:
tests/benchmarks/test_tiny.py); its figures mean nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

PRESETS = {  # Atlas preset -> (overrides that match the reference's timing, reference CONFIG name)
    "smoke": ([], None),  # seconds; checks the plumbing (not in the default list)
    "cifar": ([], "cifar"),
    "imagenet128": (["train.accumulate=1", "train.ortho_reg=0"], "i128"),
    "imagenet128-deep": (["train.accumulate=1", "train.ortho_reg=0"], "deep"),
}
VARIANTS = {
    "default": [],
    "eager": ["runtime.compile=false"],
    "fp32": ["runtime.precision=fp32", "runtime.channels_last=false"],
    "deterministic": ["runtime.deterministic=true"],
    "accumulate8": ["train.accumulate=8"],  # images/s should stay within 5 % of accumulate 1
}


# make bench-gpu's targets (issue 25), checked with REF_DIR set: (preset, minimum x reference,
# the GPU the target is set for). Start-up: cold and warm `default` cells of every preset.
SPEEDUP_TARGETS = (("cifar", 5.0, "H100"), ("imagenet128", 3.5, "H100"), ("imagenet128-deep", 4.0, "H200"))
BUSY_MIN_PCT = {"cifar": 80.0}
FITS_GIB = {"imagenet128-deep": 80.0}
COLD_START_MAX_S, WARM_START_MAX_S = 120.0, 30.0


def _cell(rows: list[dict[str, Any]], preset: str, variant: str) -> dict[str, Any] | None:
    return next((r for r in rows if r["preset"] == preset and r["variant"] == variant and "error" not in r), None)


def verdicts(rows: list[dict[str, Any]], info: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(target, PASS / FAIL / MISSING / INFO, the figures it is based on), one per target of the presets run."""
    out: list[tuple[str, str, str]] = []
    device = str(info.get("device") or "")
    presets = list(dict.fromkeys(r["preset"] for r in rows))
    for preset, minimum, gpu in SPEEDUP_TARGETS:
        if preset not in presets:
            continue
        where = "" if gpu.lower() in device.lower() else f"; target set for {gpu}, measured on {device or 'unknown'}"
        atlas, ref = _cell(rows, preset, "default"), _cell(rows, preset, "reference")
        if atlas is None or ref is None or not ref.get("g_iters_per_s"):
            out.append((f"{preset} >= {minimum:g}x reference", "MISSING", f"no default or reference cell{where}"))
        else:
            ratio = atlas["g_iters_per_s"] / ref["g_iters_per_s"]
            ok = "PASS" if ratio >= minimum else "FAIL"
            out.append((f"{preset} >= {minimum:g}x reference", ok, f"{ratio:.2f}x{where}"))
        if preset in BUSY_MIN_PCT and atlas is not None:
            busy = atlas.get("gpu_util_percent_mean")
            ok = "MISSING" if not isinstance(busy, (int, float)) else "PASS" if busy >= BUSY_MIN_PCT[preset] else "FAIL"
            out.append((f"{preset} GPU busy >= {BUSY_MIN_PCT[preset]:g} %", ok, f"{busy} %{where}"))
        if preset in FITS_GIB and atlas is not None:
            peak = atlas.get("peak_gpu_memory_gib")
            ok = "MISSING" if not isinstance(peak, (int, float)) else "PASS" if peak <= FITS_GIB[preset] else "FAIL"
            out.append((f"{preset} fits {FITS_GIB[preset]:g} GB", ok, f"peak {peak} GiB"))
    for preset in presets:
        cold, warm = _cell(rows, preset, "default"), _cell(rows, preset, "default-warm")
        for name, row, limit in (("cold", cold, COLD_START_MAX_S), ("warm", warm, WARM_START_MAX_S)):
            value = row.get("startup_s") if row else None
            ok = "MISSING" if not isinstance(value, (int, float)) else "PASS" if value <= limit else "FAIL"
            detail = f"{value} s" + ("" if row or name == "cold" else " (run with --startup)")
            out.append((f"{preset} {name} start <= {limit:g} s", ok, detail))
        if cold is not None:  # no threshold set: reported, for the closing note and the history
            out.append((f"{preset} MFU", "INFO", f"{cold.get('mfu_pct')} % ({cold.get('achieved_tflops')} TFLOP/s)"))
    return out


def nvidia_gpu_present() -> bool:
    """An NVIDIA GPU on this machine, whatever torch says: nvidia-smi on PATH or the driver loaded."""
    import shutil

    driver = Path("/proc/driver/nvidia/gpus").is_dir() or Path("/dev/nvidia0").exists()
    return bool(shutil.which("nvidia-smi")) or driver


def gpu_info() -> dict[str, Any] | None:
    """Device, driver, torch and CUDA versions, or None when PyTorch sees no CUDA GPU."""
    import torch

    if not torch.cuda.is_available():
        return None
    info: dict[str, Any] = {
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "gpus": torch.cuda.device_count(),
    }
    try:
        import pynvml

        pynvml.nvmlInit()
        info["driver"] = pynvml.nvmlSystemGetDriverVersion()
    except Exception as exc:  # NVML missing: GPU-busy % is then unavailable too
        info["driver"] = f"unknown ({type(exc).__name__})"
    return info


def _last_json(text: str) -> dict[str, Any] | None:
    """The JSON document a timing script printed (indented or one line)."""
    start = text.find("{")
    for candidate in (text[start:] if start >= 0 else "", *reversed(text.strip().splitlines())):
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    return None


def run_atlas(preset: str, variant: str, args: argparse.Namespace, cache_dir: Path) -> dict[str, Any]:
    overrides = (
        PRESETS[preset][0] + VARIANTS[variant.removesuffix("-warm")] + [f"runtime.compile_cache_dir={cache_dir}"]
    )
    cmd = [
        sys.executable,
        str(REPO / "benchmarks" / "train_throughput.py"),
        "--experiment",
        preset,
        "--iters",
        str(args.iters),
        "--warmup",
        str(args.warmup),
    ]
    for item in overrides:
        cmd += ["--set", item]
    return _run(cmd, args.cell_timeout, {"impl": "atlas", "preset": preset, "variant": variant}, os.environ)


def run_reference(preset: str, args: argparse.Namespace) -> dict[str, Any]:
    from train_throughput import GpuUtilSampler

    env = dict(os.environ)
    if preset == "imagenet128-deep":
        env.setdefault("BS", "256")
    cmd = [sys.executable, args.ref_script, PRESETS[preset][1], str(args.iters), str(args.warmup)]
    with GpuUtilSampler(0) as sampler:  # spans warm-up too: the script times inside itself
        row = _run(cmd, args.cell_timeout, {"impl": "reference", "preset": preset, "variant": "reference"}, env)
    row["gpu_util_percent_mean"] = sampler.result()
    return row


def _run(cmd: list[str], timeout: float, row: dict[str, Any], env: Any) -> dict[str, Any]:
    t0 = time.time()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO)
    except subprocess.TimeoutExpired:
        return {**row, "error": f"timed out after {timeout:.0f} s"}
    row["process_s"] = round(time.time() - t0, 1)
    result = _last_json(proc.stdout)
    if proc.returncode != 0 or result is None:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1][:300]
        return {**row, "error": f"exit {proc.returncode}: {tail}"}
    return {**row, **result}


def table(rows: list[dict[str, Any]], info: dict[str, Any]) -> str:
    ref = {r["preset"]: r.get("g_iters_per_s") for r in rows if r["impl"] == "reference" and "error" not in r}
    lines = [
        f"{info['device']}, driver {info['driver']}, torch {info['torch']}, CUDA {info['cuda']}",
        "",
        "| preset | variant | G it/s | × reference | images/s | peak GiB | GPU busy % | start-up s (cache) | MFU % |",
        "|---|---|---:|---:|---:|---:|---:|---|---:|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['preset']} | {r['variant']} | error: {r['error']} | | | | | | |")
            continue
        its = r.get("g_iters_per_s")
        ratio = f"{its / ref[r['preset']]:.2f}×" if its and ref.get(r["preset"]) and r["impl"] == "atlas" else ""
        peak = r.get("peak_gpu_memory_gib", r.get("peak_mem_gb"))
        startup = (
            f"{r['startup_s']} ({r.get('compile_cache') or 'no compile'})" if r.get("startup_s") is not None else ""
        )
        busy = r.get("gpu_util_percent_mean")
        lines.append(
            f"| {r['preset']} | {r['variant']} | {its} | {ratio} | {r.get('images_per_s')} | "
            f"{'–' if peak is None else peak} | {'–' if busy is None else busy} | {startup} | "
            f"{'–' if r.get('mfu_pct') is None else r['mfu_pct']} |"
        )
    return "\n".join(lines)


def _names(value: str, known: dict[str, Any], what: str) -> list[str]:
    names = [v for v in value.split(",") if v]
    unknown = [v for v in names if v not in known]
    if unknown:
        raise SystemExit(f"gpu_matrix: unknown {what} {', '.join(unknown)} (known: {', '.join(known)})")
    return names


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--presets",
        default="cifar,imagenet128,imagenet128-deep",
        help=f"comma-separated of {', '.join(PRESETS)} (default: the three reference configurations)",
    )
    p.add_argument("--variants", default="default,eager,fp32", help=f"comma-separated of {', '.join(VARIANTS)}")
    p.add_argument("--iters", type=int, default=20, help="timed G iterations per cell (default 20)")
    p.add_argument("--warmup", type=int, default=5, help="untimed G iterations first (default 5)")
    p.add_argument("--startup", action="store_true", help="run `default` again on a warm compiler cache")
    p.add_argument(
        "--ref-script",
        default=os.environ.get("REF_SCRIPT"),
        help="reference timing script (needs REF_DIR); default $REF_SCRIPT",
    )
    p.add_argument("--cell-timeout", type=float, default=1200, help="seconds per cell (default 1200)")
    p.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help="compiler cache for every cell (default: a fresh temporary folder, so the first start is cold)",
    )
    p.add_argument("--out", type=Path, default=None, help="also append the JSON lines to this file")
    p.add_argument("--tiny", action="store_true", help="smoke preset, default cell, 1 iteration")
    p.add_argument("--cpu", action="store_true", help="without a GPU, run on the CPU anyway (checks the plumbing)")
    args = p.parse_args(argv)
    if args.tiny:
        args.presets, args.variants, args.iters, args.warmup = "smoke", "default", 1, 0
    presets, variants = _names(args.presets, PRESETS, "preset"), _names(args.variants, VARIANTS, "variant")
    info = gpu_info()
    if info is None and args.cpu:
        info = {"device": "cpu (plumbing check, not GPU figures)", "driver": "-", "torch": "-", "cuda": None}
    elif info is None:
        import torch

        if nvidia_gpu_present():  # a GPU machine whose torch cannot use it: the matrix would measure nothing
            print(
                f"gpu_matrix: error: this machine has an NVIDIA GPU but torch {torch.__version__} has no CUDA "
                "(torch.version.cuda is None or no device visible); install a CUDA build of torch"
            )
            return 1
        print("gpu_matrix: skipped: no CUDA GPU here (torch.cuda.is_available() is False); nothing to measure")
        return 0
    if args.ref_script and not os.environ.get("REF_DIR"):
        p.error("--ref-script needs REF_DIR=<extracted ajbrock/BigGAN-PyTorch> in the environment")
    judged = bool(os.environ.get("REF_DIR")) and bool(args.ref_script)
    args.startup = args.startup or judged  # the start-up targets need the warm cell
    print(json.dumps({"matrix": info}), flush=True)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        cache = args.cache_dir or Path(tmp) / "compile-cache"
        for preset in presets:
            cells = ["reference"] if args.ref_script and PRESETS[preset][1] else []
            for v in variants:
                cells += [v, "default-warm"] if v == "default" and args.startup else [v]
            for variant in cells:
                row = run_reference(preset, args) if variant == "reference" else run_atlas(preset, variant, args, cache)
                rows.append(row)
                line = json.dumps(row)
                print(line, flush=True)
                if args.out:
                    with open(args.out, "a", encoding="utf-8") as fh:
                        fh.write(line + "\n")
    print()
    print(table(rows, info))
    if not judged:
        return 0
    found = verdicts(rows, info)
    print()
    print("| target | verdict | measured |\n|---|---|---|")
    for target, verdict, detail in found:
        print(f"| {target} | {verdict} | {detail} |")
    return 1 if any(v in ("FAIL", "MISSING") for _, v, _ in found) else 0


if __name__ == "__main__":
    sys.exit(main())
