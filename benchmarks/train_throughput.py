"""Training throughput of the BigGAN workload on this machine, printed as JSON.

    python benchmarks/train_throughput.py --experiment cifar --iters 5 --warmup 2 [--set KEY=VALUE ...]

Builds the real trainer for a preset (plus overrides), runs `--warmup` G iterations
untimed (allocator, cuDNN autotuning, CUDA graph recording), then times `--iters` G
iterations and prints G iterations/s and images/s. Images/s counts real images fed to D,
as `images_per_s` in train.jsonl does. Only the compiler cache is written to disk
(`runtime.compile_cache_dir`, or `.torch-compile-cache` in a temporary folder). It also
reports start-up: `setup_s` (building the trainer, torch.compile included), `first_iter_s`
and `startup_s` (process start to the end of the first iteration), with `compile_cache`
cold or warm. On CUDA: peak GPU memory and, when NVML is available, the mean GPU
utilisation while timing.

`--tiny` runs it at a size that takes seconds, to check it still works (make test runs it:
tests/benchmarks/test_tiny.py); its figures mean nothing.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from bench.analysis.peak_flops import peak_tflops  # noqa: E402
from workflows.biggan.config import config_sha256, resolve  # noqa: E402
from workflows.biggan.distributed import World  # noqa: E402
from workflows.biggan.errors import WorkloadConfigError  # noqa: E402
from workflows.biggan.flops import flops_per_g_iteration  # noqa: E402
from workflows.biggan.runtime import process_start_time  # noqa: E402
from workflows.biggan.trainer import Trainer  # noqa: E402


def cpu_model() -> str:
    """The CPU's marketing name from /proc/cpuinfo (x86 `model name`, POWER `cpu`)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "cpu") and value.strip():
                return f"{value.strip()} ({platform.machine()})"
    except OSError:
        pass
    return platform.processor() or platform.machine()


class GpuUtilSampler:
    """Mean NVML GPU utilisation of the trainer's device while the timed loop runs."""

    def __init__(self, index: int, period: float = 0.2) -> None:
        self.values: list[int] = []
        self._stop = threading.Event()
        self._period = period
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml, self._handle = pynvml, pynvml.nvmlDeviceGetHandleByIndex(index)
        except Exception as exc:  # no NVML library, no permission
            self._nvml, self.error = None, f"{type(exc).__name__}: {exc}"
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self._period):
            self.values.append(self._nvml.nvmlDeviceGetUtilizationRates(self._handle).gpu)

    def __enter__(self) -> GpuUtilSampler:
        if self._nvml is not None:
            self._thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        if self._nvml is not None:
            self._stop.set()
            self._thread.join()

    def result(self) -> float | str:
        if self._nvml is None:
            return f"unavailable ({self.error})"
        return round(sum(self.values) / len(self.values), 1) if self.values else "no samples (loop too short)"


def _how_it_ran(t: Trainer) -> dict[str, Any]:
    """Device, kernels and compiler of the measured trainer (the figures depend on them)."""
    cuda = t.device.type == "cuda"
    return {
        "device": str(t.device),
        "device_name": torch.cuda.get_device_name(t.device) if cuda else cpu_model(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "precision": str(t.amp_dtype or torch.float32).replace("torch.", ""),
        "channels_last": t.channels_last,
        "deterministic": t.deterministic,
        **{k: v for k, v in t.compile.record().items() if k != "compile_cache_dir"},
        "compile_warning": t.compile.warning,
    }


def measure(experiment: str, overrides: list[str], iters: int, warmup: int) -> dict[str, Any]:
    c = resolve(experiment, overrides)
    process_start = process_start_time()
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.time()
        t = Trainer(c, Path(tmp) / "run", experiment, world=World())  # compiles (probe) when compile is on
        setup_s = time.time() - t0
        real = t.guard_compile(t.batches())  # as a training run: compiled = eager on the first batch
        cuda = t.device.type == "cuda"

        def sync() -> None:
            if cuda:
                torch.cuda.synchronize(t.device)

        first_iter_s = None
        for i in range(warmup):
            t.step(real)
            if i == 0:
                sync()
                first_iter_s = time.time() - t0 - setup_s
        startup_s = time.time() - process_start if warmup else None
        sync()
        if cuda:
            torch.cuda.reset_peak_memory_stats(t.device)
        images0 = t.images_seen
        sampler = GpuUtilSampler(t.device.index or 0) if cuda else None
        with sampler or _Null():
            start = time.perf_counter()
            for _ in range(iters):
                t.step(real)
            sync()
            seconds = time.perf_counter() - start
        losses = t.take_losses()
    out: dict[str, Any] = {
        "experiment": experiment,
        "overrides": overrides,
        "config_sha256": config_sha256(c),
        **_how_it_ran(t),
        "setup_s": round(setup_s, 3),
        "first_iter_s": None if first_iter_s is None else round(first_iter_s, 3),
        "startup_s": None if startup_s is None else round(startup_s, 3),
        "batch_size": c["train.batch_size"],
        "d_steps": c["train.d_steps"],
        "accumulate": c["train.accumulate"],
        "warmup_iters": warmup,
        "timed_iters": iters,
        "seconds": round(seconds, 4),
        "g_iters_per_s": round(iters / seconds, 4),
        "images_per_s": round((t.images_seen - images0) / seconds, 2),
        "g_params_m": round(sum(p.numel() for p in t.G.parameters()) / 1e6, 3),
        "d_params_m": round(sum(p.numel() for p in t.D.parameters()) / 1e6, 3),
        "losses_finite": all(v is not None for v in losses.values()),
    }
    flops = flops_per_g_iteration(c)
    out["flops_per_g_iteration"] = flops
    out["achieved_tflops"] = round(flops * iters / seconds / 1e12, 3)
    if cuda:
        out["peak_gpu_memory_gib"] = round(torch.cuda.max_memory_allocated(t.device) / 2**30, 3)
        out["gpu_util_percent_mean"] = sampler.result() if sampler else None
        peak = peak_tflops(out["device_name"], out["precision"])
        out["mfu_pct"] = round(100 * out["achieved_tflops"] / peak, 2) if peak else None  # unknown GPU: none
    return out


class _Null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: Any) -> None:
        return None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    p.add_argument("--experiment", default="smoke", help="preset name or .yaml path (default smoke)")
    p.add_argument("--iters", type=int, default=10, help="timed G iterations (default 10)")
    p.add_argument("--warmup", type=int, default=2, help="untimed G iterations first (default 2)")
    p.add_argument("--tiny", action="store_true", help="the smoke preset, 1 iteration, no warm-up: seconds")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    args = p.parse_args(argv)
    if args.tiny:
        args.experiment, args.iters, args.warmup = "smoke", 1, 0
    if args.iters < 1 or args.warmup < 0:
        p.error("--iters must be >= 1 and --warmup >= 0")
    try:
        result = measure(args.experiment, args.overrides, args.iters, args.warmup)
    except WorkloadConfigError as exc:
        print(f"train_throughput: error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
