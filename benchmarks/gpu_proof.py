"""The GPU proof: one command that measures the whole GPU path and leaves its evidence in the repository.

    REF_DIR=<extracted ajbrock/BigGAN-PyTorch> python3 benchmarks/gpu_proof.py       # on a GPU machine
    python benchmarks/gpu_proof.py --rehearse [--out DIR]                          # anywhere, on the CPU

GPU time is scarce here (minutes, at most 10 at a stretch), so everything runs from one
command within a total budget (`--budget`, default 510 s, so that installing Atlas and
the proof stay under 9 minutes, a minute to spare in a 10-minute slot). The cells run in
this order, each in its own process with its own time limit (never past the total), and
each is appended to `cells.jsonl` as soon as it ends, so a run cut off keeps what
finished:

 1. cifar: the reference (`benchmarks/reference_timing.py`) and Atlas `default` (ratio, GPU busy);
 2. cifar with `train.accumulate=2` (must not crash; images/s within 5 % of accumulate 1);
 3. a recorded `bench run --env local --experiment cifar` of about 90 s on a fresh compiler
    cache (busy, SM and tensor activity from GPM, MFU, J/image from NVML's energy counter
    and from integrated power, compile guard, graph breaks, start-up cold);
 4. the same run on the compiler cache the first one filled (start-up warm), 45 s;
 5. the host side of one cifar G iteration (`benchmarks/step_overhead.py`: ATen operators
    dispatched, time outside them), read with GPU busy when cifar misses its target;
 6. optional, when their estimates still fit (or alone: `--cells 'imagenet128/*'`):
    imagenet128, the reference and Atlas `default` (compile mode `default`, as max-autotune
    would not finish), then imagenet128-deep.

Evidence goes to `benchmarks/results/<date>-<gpu>/`: cells.jsonl, the two recorded runs'
records, and README.md (table, PASS/FAIL per target with what to do next, the command,
torch/CUDA/driver versions); the top-level README's performance block is updated to the
new table. `--rehearse` runs every step on the `smoke` preset on the CPU, with the NVML
double of the tests standing in for the GPU and a stand-in reference tree when REF_DIR is
not set, into a temporary folder: it checks the plumbing, its verdicts say "rehearsal",
and it refuses to write under benchmarks/results or to touch the README.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

import gpu_matrix as gm  # noqa: E402
import gpu_proof_evidence as ev  # noqa: E402
import gpu_proof_record as rec  # noqa: E402

RESULTS = HERE / "results"
DEFAULT_BUDGET_S = 510.0
MIN_CELL_S = 10.0  # a cell given less than this is recorded as skipped, not started


@dataclass
class Cell:
    """One measurement: what runs, its own time limit and the time it is expected to take (H100)."""

    name: str
    kind: str  # reference | atlas | record | overhead
    preset: str
    budget_s: float
    estimate_s: float
    overrides: list[str] = field(default_factory=list)
    iters: int = 20
    warmup: int = 5
    ref_config: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    cache: str = "shared"  # the compiler cache: shared (cells 1-3) | record (the two recorded runs)
    optional: bool = False  # runs only when its estimate still fits the budget
    start_s: float = 10.0  # a recorded run: start-up before its first timed iteration (compile, data)


def gpu_plan(deep_batch: int) -> list[Cell]:
    """The cells on a GPU, most telling first. Estimates: see benchmarks/README.md (GPU proof).

    The first GPU run (2026-11-27, H100) measured what the first plan only guessed: a cold
    compile of imagenet128 in mode `default` outlasted its 170 s, and it took the recorded
    runs' time with it. So the cifar cells and the two recorded runs come first and are
    required; the imagenet128 and BigGAN-deep cells are optional (run when their estimates
    still fit) and have a run of their own: `--cells 'imagenet128/*'`.
    """
    i128 = [*gm.PRESETS["imagenet128"][0], "runtime.compile_mode=default"]
    deep = [*gm.PRESETS["imagenet128-deep"][0], "runtime.compile_mode=default", f"train.batch_size={deep_batch}"]
    return [
        Cell("cifar/reference", "reference", "cifar", 60, 30, ref_config="cifar"),
        Cell("cifar/default", "atlas", "cifar", 150, 90),
        Cell("cifar/accumulate2", "atlas", "cifar", 120, 65, ["train.accumulate=2"]),
        # profile_iters=5: a run bounded by time is not profiled by auto; its 5 iterations fall in
        # the first train line, which steady images/s drops anyway, so the GPU's layer profile is free
        Cell(
            "cifar/run-cold",
            "record",
            "cifar",
            200,
            170,
            ["train.max_seconds=90", "train.profile_iters=5"],
            cache="record",
            start_s=75,
        ),
        Cell("cifar/run-warm", "record", "cifar", 100, 75, ["train.max_seconds=45"], cache="record", start_s=25),
        Cell("cifar/host-overhead", "overhead", "cifar", 40, 20, ["train.batch_size=2"], iters=2, warmup=1),
        Cell(
            "imagenet128/reference",
            "reference",
            "imagenet128",
            90,
            55,
            iters=5,
            warmup=2,
            ref_config="i128",
            optional=True,
        ),
        Cell("imagenet128/default", "atlas", "imagenet128", 420, 240, i128, iters=5, warmup=2, optional=True),
        Cell(
            "imagenet128-deep/reference",
            "reference",
            "imagenet128-deep",
            90,
            60,
            iters=5,
            warmup=2,
            ref_config="deep",
            env={"BS": str(deep_batch)},
            optional=True,
        ),
        Cell("imagenet128-deep/default", "atlas", "imagenet128-deep", 240, 200, deep, iters=5, warmup=2, optional=True),
    ]


def select_cells(plan: list[Cell], patterns: str) -> list[Cell]:
    """The cells whose names match one of the comma-separated shell patterns, in the plan's order;
    a selected cell is required (the run is for it)."""
    wanted = [p.strip() for p in patterns.split(",") if p.strip()]
    return [replace(c, optional=False) for c in plan if any(fnmatch.fnmatchcase(c.name, w) for w in wanted)]


def cell_limit(cell: Cell, left: float, later: list[Cell]) -> float:
    """A cell's time limit: its own, but never eating the estimates of the required cells after it
    (a cell that overruns cost the first GPU run its recorded runs); at least its own estimate."""
    reserve = sum(c.estimate_s for c in later if not c.optional)
    return min(cell.budget_s, left, max(left - reserve, cell.estimate_s))


def fit_to_limit(cell: Cell, limit: float) -> Cell:
    """A recorded run bounded by `train.max_seconds` shortened to end inside its limit: its
    start-up, and about 45 s of submission, process start, recorder and collection (measured on
    the H100: 166 s for a 60 s run with a 67 s compile), come first; a run cut off by the limit
    leaves no record at all."""
    if cell.kind != "record":
        return cell
    overrides = []
    for item in cell.overrides:
        key, _, value = item.partition("=")
        if key == "train.max_seconds":
            value = f"{max(10.0, min(float(value), limit - cell.start_s - 45.0)):g}"
        overrides.append(f"{key}={value}")
    return replace(cell, overrides=overrides)


def rehearsal_plan() -> list[Cell]:
    """The same cells on the `smoke` preset: seconds each on a CPU (the reference's configs at batch 8)."""
    small = {"BS": "8"}
    return [
        Cell(
            c.name,
            c.kind,
            "smoke",
            300,
            10,
            (
                # a 1-iteration window where the GPU cell profiles: it stays in the first train line
                ["train.max_iters=10", *("train.profile_iters=1" for o in c.overrides if "profile_iters" in o)]
                if c.kind == "record"
                else [o for o in c.overrides if "compile_mode" not in o and "batch_size" not in o]
            ),
            iters=1 if c.kind == "overhead" else 2,
            warmup=1,
            ref_config=c.ref_config,
            env=small if c.kind == "reference" else {},
            cache=c.cache,
            optional=c.optional,
        )
        for c in gpu_plan(8)
    ]


def _python_env(extra: dict[str, str], shim: Path | None) -> dict[str, str]:
    env = dict(os.environ, **extra)
    if shim is not None:  # rehearsal: `import pynvml` finds the NVML double first, in every child
        env["PYTHONPATH"] = os.pathsep.join([str(shim), str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        env["CUDA_VISIBLE_DEVICES"] = "0"  # the job's GPU: the double's GPU 0 (GPM, power, energy)
    return env


def run_cell(cell: Cell, limit: float, ctx: dict[str, Any]) -> dict[str, Any]:
    """Run one cell in its own process within `limit` seconds; its JSON row (an `error` key when it failed)."""
    row: dict[str, Any] = {
        "cell": cell.name,
        "impl": "reference" if cell.kind == "reference" else "atlas",
        "preset": cell.preset,
        "variant": cell.name.split("/", 1)[1],
        "limit_s": round(limit),
    }
    env = _python_env(cell.env, ctx.get("shim"))
    cache = ctx["caches"][cell.cache]
    if cell.kind == "reference":
        if not ctx.get("ref_dir"):
            return {
                **row,
                "status": "reference absent",
                "error": "REF_DIR is not set: no reference figure (see benchmarks/README.md, GPU proof)",
            }
        cmd = [
            sys.executable,
            str(HERE / "reference_timing.py"),
            cell.ref_config or "",
            str(cell.iters),
            str(cell.warmup),
        ]
        from train_throughput import GpuUtilSampler  # spans the script's warm-up too: it times inside itself

        with GpuUtilSampler(0) if ctx["gpu"] or ctx.get("shim") else _Null() as sampler:
            out = gm._run(cmd, limit, row, dict(env, REF_DIR=ctx["ref_dir"]))
        if sampler is not None:
            out["gpu_util_percent_mean"] = sampler.result()
        return out
    if cell.kind == "atlas":
        cmd = _preset_command("train_throughput.py", cell, [*cell.overrides, f"runtime.compile_cache_dir={cache}"])
        return gm._run(cmd, limit, {**row, "overrides": cell.overrides}, env)
    if cell.kind == "overhead":
        return gm._run(_preset_command("step_overhead.py", cell, cell.overrides), limit, row, env)
    return rec.record_cell(cell, limit, row, env, cache, ctx["out"])


def _preset_command(script: str, cell: Any, overrides: list[str]) -> list[str]:
    """The command line of a benchmark script that times one preset (train_throughput, step_overhead)."""
    cmd = [sys.executable, str(HERE / script), "--experiment", cell.preset]
    cmd += ["--iters", str(cell.iters), "--warmup", str(cell.warmup)]
    for item in overrides:
        cmd += ["--set", item]
    return cmd


class _Null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: Any) -> None:
        return None


def write_nvml_shim(folder: Path) -> Path:
    """A `pynvml` that is the tests' NVML double (one H100-named GPU 0 whose energy counter
    advances at its 250.5 W power reading), for the rehearsal's child processes."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pynvml.py").write_text(
        ev.NVML_SHIM.format(repo=str(REPO), t0=repr(time.time())),
        encoding="utf-8",
    )
    return folder


def evidence_dir(info: dict[str, Any], rehearse: bool, out: Path | None) -> Path:
    """Where the evidence goes; a rehearsal never writes under benchmarks/results."""
    if rehearse:
        folder = out or Path(tempfile.mkdtemp(prefix="gpu-proof-rehearsal-"))
        if folder.resolve().is_relative_to(RESULTS.resolve()):
            raise SystemExit(
                f"gpu_proof: error: a rehearsal is not a GPU result: refusing to write under {RESULTS}; "
                "pass --out DIR outside it (default: a temporary folder)"
            )
        return folder
    if out is not None:
        return out
    slug = re.sub(r"[^a-z0-9]+", "-", str(info["device"]).lower().replace("nvidia", "")).strip("-") or "gpu"
    folder = RESULTS / f"{time.strftime('%Y-%m-%d', time.gmtime())}-{slug}"
    return folder if not folder.exists() else folder.with_name(f"{folder.name}-{time.strftime('%H%M%S')}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    p.add_argument("--rehearse", action="store_true", help="every step on the smoke preset on the CPU (plumbing)")
    p.add_argument("--budget", type=float, default=None, help="total seconds (default 510; rehearsal 600)")
    p.add_argument("--out", type=Path, default=None, help="evidence folder (default: see above)")
    p.add_argument("--no-readme", action="store_true", help="GPU run: leave the top-level README as it is")
    p.add_argument(
        "--cells",
        default=None,
        metavar="PATTERNS",
        help="run only the cells whose names match these comma-separated patterns (e.g. 'imagenet128/*'), "
        "with the whole budget; such a partial run leaves the top-level README as it is",
    )
    args = p.parse_args(argv)
    started = time.time()
    budget = args.budget or (600.0 if args.rehearse else DEFAULT_BUDGET_S)
    info = gm.gpu_info() if not args.rehearse else None
    if info is None and not args.rehearse:
        if gm.nvidia_gpu_present():
            print(
                "gpu_proof: error: this machine has an NVIDIA GPU but torch has no CUDA; install a CUDA build of torch"
            )
            return 1
        print("gpu_proof: no CUDA GPU here; nothing to prove (try --rehearse, which checks the plumbing on the CPU)")
        return 1
    ref_dir = os.environ.get("REF_DIR")
    missing = ev.missing_modules(reference=bool(ref_dir))
    if missing:  # the cells that need them fail with their own error; the others still measure
        print(f"gpu_proof: warning: this Python lacks {', '.join(missing)}: cells that import them will fail")
    if ref_dir and not (Path(ref_dir) / "BigGAN.py").is_file():
        print(f"gpu_proof: error: REF_DIR={ref_dir} holds no BigGAN.py: name the extracted ajbrock/BigGAN-PyTorch")
        return 2
    out = evidence_dir(info or {}, args.rehearse, args.out)
    out.mkdir(parents=True, exist_ok=True)
    ctx: dict[str, Any] = {"gpu": not args.rehearse, "out": out, "ref_dir": ref_dir and str(Path(ref_dir).resolve())}
    work = Path(tempfile.mkdtemp(prefix="gpu-proof-work-"))
    ctx["caches"] = {"shared": work / "cache-cells", "record": work / "cache-record"}
    if args.rehearse:
        ctx["shim"] = write_nvml_shim(work / "nvml-double")
        if not ctx["ref_dir"]:
            from reference_stand_in import write_stand_in

            ctx["ref_dir"] = str(write_stand_in(work / "reference-STAND-IN"))
        sys.path.insert(0, str(ctx["shim"]))
        sys.modules.pop("pynvml", None)  # the parent's sampler (reference cells) reads the double too
        info = ev.rehearsal_info()
    else:
        info["memory_gib"] = ev.gpu_memory_gib()
    plan = rehearsal_plan() if args.rehearse else gpu_plan(256 if info.get("memory_gib", 0) > 100 else 128)
    if args.cells:
        plan = select_cells(plan, args.cells)
        if not plan:
            print(f"gpu_proof: error: no cell matches --cells {args.cells!r}; the cells: see benchmarks/README.md")
            return 2
    command = ev.command_line(args.rehearse, sys.argv[1:] if argv is None else argv)
    print(json.dumps({"gpu_proof": info, "evidence": str(out), "budget_s": budget}), flush=True)
    rows: list[dict[str, Any]] = []
    deadline = started + budget
    try:
        for i, cell in enumerate(plan):
            left = deadline - time.time()
            need = cell.estimate_s if cell.optional else MIN_CELL_S
            if left < need:
                row = {
                    "cell": cell.name,
                    "preset": cell.preset,
                    "variant": cell.name.split("/", 1)[1],
                    "impl": "reference" if cell.kind == "reference" else "atlas",
                    "status": "skipped",
                    "error": f"{max(left, 0):.0f} s of the {budget:.0f} s budget left, the cell needs ~{need:.0f} s",
                }
            else:
                limit = cell_limit(cell, left, plan[i + 1 :])
                row = run_cell(fit_to_limit(cell, limit), limit, ctx)
                row.setdefault("status", "error" if "error" in row else "ok")
            if args.rehearse:
                row["rehearsal"] = True
            rows.append(row)
            line = json.dumps(row)
            print(line, flush=True)
            with open(out / "cells.jsonl", "a", encoding="utf-8") as fh:
                fh.write(line + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    total = round(time.time() - started, 1)
    text = ev.write_readme(out, rows, info, command=command, rehearse=args.rehearse, total_s=total, budget_s=budget)
    print(text)
    if not args.rehearse and not args.no_readme and not args.cells:
        ev.update_top_readme(REPO / "README.md", out.relative_to(REPO) if out.is_relative_to(REPO) else out, text)
    print(f"gpu_proof: {len(rows)} cells in {total} s; evidence in {out}")
    if args.rehearse:  # the plumbing: every cell ran (its figures are the CPU's, judged by nobody)
        broken = [r["cell"] for r in rows if r.get("status") != "ok"]
        if broken:
            print(f"gpu_proof: rehearsal: cells that did not run cleanly: {', '.join(broken)} (see cells.jsonl)")
        return 1 if broken else 0
    verdict_lines = ev.parse_targets(text)
    return 1 if any(v["verdict"] in ("FAIL", "MISSING") for v in verdict_lines) else 0


if __name__ == "__main__":
    sys.exit(main())
