"""Host overhead of one G iteration on CPU: dispatched ATen operators and time outside them.

    python benchmarks/step_overhead.py [--experiment cifar] [--iters 2] [--warmup 1] [--set KEY=VALUE ...]

A GPU stays busy only if the host issues work faster than the GPU runs it. This proxy
measures the host side on any machine: it builds the real trainer on the CPU, runs
`--warmup` G iterations, then profiles `--iters` more with torch.profiler and prints:

- `aten_ops_per_iter`: top-level ATen operators dispatched per G iteration (each one is
  at least one kernel launch on a GPU); `aten_ops_all_per_iter` counts nested ones too;
- `host_outside_ops_ms_per_iter`: wall time of the profiled iterations not covered by any
  top-level ATen operator (Python, autograd-engine bookkeeping, profiler overhead);
- `wall_ms_per_iter`: the same iterations timed without the profiler.

The operator counts do not depend on the batch size, so `--set train.batch_size=2`
measures the same overhead faster; the architecture stays the preset's. Asserts nothing
unless `--max-ops N` is given: then it exits 1 when an iteration dispatches more than N
top-level operators (a regression guard that does not depend on timing).

`--tiny` runs it at a size that takes seconds, to check it still works (make test runs it:
tests/benchmarks/test_tiny.py); its figures mean nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from workflows.biggan.config import resolve  # noqa: E402
from workflows.biggan.distributed import World  # noqa: E402
from workflows.biggan.errors import WorkloadConfigError  # noqa: E402
from workflows.biggan.trainer import Trainer  # noqa: E402


def _top_level(events: list[Any]) -> list[Any]:
    """ATen events with no ATen ancestor: what Python or the autograd engine dispatched."""
    out = []
    for e in events:
        if not e.name.startswith("aten::"):
            continue
        parent = e.cpu_parent
        while parent is not None and not parent.name.startswith("aten::"):
            parent = parent.cpu_parent
        if parent is None:
            out.append(e)
    return out


def _covered_us(events: list[Any]) -> float:
    """Length of the union of the events' [start, end] intervals, in microseconds."""
    spans = sorted((e.time_range.start, e.time_range.end) for e in events)
    total, cur_start, cur_end = 0.0, None, None
    for s, t in spans:
        if cur_end is None or s > cur_end:
            if cur_end is not None:
                total += cur_end - cur_start
            cur_start, cur_end = s, t
        else:
            cur_end = max(cur_end, t)
    if cur_end is not None:
        total += cur_end - cur_start
    return total


def measure(experiment: str, overrides: list[str], iters: int, warmup: int) -> dict[str, Any]:
    c = resolve(experiment, ["runtime.device=cpu", *overrides])
    with tempfile.TemporaryDirectory() as tmp:
        t = Trainer(c, Path(tmp), experiment, world=World())
        real = t.batches()
        for _ in range(warmup):
            t.step(real)
        start = time.perf_counter()
        for _ in range(iters):
            t.step(real)
        wall = (time.perf_counter() - start) / iters
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            p0 = time.perf_counter()
            for _ in range(iters):
                t.step(real)
            profiled_us = (time.perf_counter() - p0) * 1e6
        t.take_losses()
    events = list(prof.events())
    top = _top_level(events)
    n_all = sum(1 for e in events if e.name.startswith("aten::"))
    outside_us = max(profiled_us - _covered_us(top), 0.0)
    counts: dict[str, int] = {}
    for e in top:
        counts[e.name] = counts.get(e.name, 0) + 1
    busiest = sorted(counts.items(), key=lambda kv: -kv[1])[:8]
    return {
        "experiment": experiment,
        "overrides": overrides,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "batch_size": c["train.batch_size"],
        "d_steps": c["train.d_steps"],
        "accumulate": c["train.accumulate"],
        "g_ch": c["model.g_ch"],
        "d_ch": c["model.d_ch"],
        "iters": iters,
        "warmup": warmup,
        "aten_ops_per_iter": round(len(top) / iters, 1),
        "aten_ops_all_per_iter": round(n_all / iters, 1),
        "host_outside_ops_ms_per_iter": round(outside_us / iters / 1e3, 2),
        "profiled_ms_per_iter": round(profiled_us / iters / 1e3, 2),
        "wall_ms_per_iter": round(wall * 1e3, 2),
        "most_dispatched": dict((k, round(v / iters, 1)) for k, v in busiest),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    p.add_argument("--experiment", default="cifar", help="preset name or .yaml path (default cifar)")
    p.add_argument("--iters", type=int, default=2, help="profiled (and timed) G iterations (default 2)")
    p.add_argument("--warmup", type=int, default=1, help="untimed G iterations first (default 1)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--tiny", action="store_true", help="the smoke preset, 1 iteration, no warm-up: seconds")
    p.add_argument(
        "--max-ops",
        type=float,
        default=None,
        metavar="N",
        help="exit 1 when aten_ops_per_iter exceeds N (regression guard)",
    )
    args = p.parse_args(argv)
    if args.tiny:
        args.experiment, args.iters, args.warmup = "smoke", 1, 0
    if args.iters < 1 or args.warmup < 0:
        p.error("--iters must be >= 1 and --warmup >= 0")
    try:
        result = measure(args.experiment, args.overrides, args.iters, args.warmup)
    except WorkloadConfigError as exc:
        print(f"step_overhead: error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2))
    if args.max_ops is not None and result["aten_ops_per_iter"] > args.max_ops:
        print(
            f"step_overhead: {result['aten_ops_per_iter']} ATen operators per G iteration, "
            f"more than --max-ops {args.max_ops}",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
