"""Sampler overhead: training images/s bare vs under `bench record` at 1 Hz and 10 Hz.

Runs the real workload (smoke preset, more iterations) in interleaved rounds so the
three modes see the same machine conditions, and reads images/s from each run's own
train.jsonl (steady-state median, as `bench compare` does). On a shared machine
images/s moves by more than the overhead, so two steadier figures come with it: the
recorder's own CPU seconds as a share of the job's (run.json `recorder`), and the CPU
cost of one sampler tick timed directly. Prints JSON; asserts nothing.

    .venv/bin/python benchmarks/sampler_overhead.py [--iters 300] [--rounds 3]

`--tiny` runs it at a size that takes seconds, to check it still works (make test runs it:
tests/benchmarks/test_tiny.py); its figures mean nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.in_job.sampler import Sampler  # noqa: E402
from bench.records.trainlog import read_train_log, steady_images_per_s  # noqa: E402

MODES = {"bare": None, "record_1hz": 1.0, "record_10hz": 0.1}


def run_once(mode: str, iters: int, root: Path, n: int) -> float:
    run_dir = root / f"{mode}-{n}"
    workload = [
        sys.executable,
        "-m",
        "workflows.biggan",
        "--experiment",
        "smoke",
        "--run-dir",
        str(run_dir),
        "--set",
        f"train.max_iters={iters}",
        "--set",
        "train.log_every=10",
        "--set",
        f"train.checkpoint_every={iters}",
        "--set",
        "train.sample_grid=false",
    ]
    interval = MODES[mode]
    cmd = (
        workload
        if interval is None
        else [
            sys.executable,
            "-m",
            "bench",
            "record",
            "--run-dir",
            str(run_dir),
            "--env",
            "bench",
            "--interval",
            str(interval),
            "--",
            *workload,
        ]
    )
    subprocess.run(cmd, cwd=REPO, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rates = steady_images_per_s(read_train_log(run_dir / "train.jsonl"))
    if interval is not None:
        usage = json.loads((run_dir / "run.json").read_text())["recorder"]
        CPU_SHARE[mode].append(usage["cpu_s"] / usage["job_cpu_s"] * 100)
    return float(np.median(rates))


CPU_SHARE: dict[str, list[float]] = {"record_1hz": [], "record_10hz": []}


def sampler_tick_cost(samples: int = 300) -> dict[str, float]:
    """CPU seconds of one sample_once() on a live two-process tree."""
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess,sys,time;"
            "p=subprocess.Popen([sys.executable,'-c','import time; time.sleep(60)']);time.sleep(60)",
        ],
        # its own session, killed as a group below, and off our stdout: a grandchild left
        # holding the caller's pipe would keep a `capture_output` caller waiting 60 s
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(0.5)
        with tempfile.TemporaryDirectory() as tmp:
            s = Sampler(Path(tmp) / "s.csv", child.pid, 1.0)
            s.sample_once()
            cpu0, wall0 = time.process_time(), time.perf_counter()
            for _ in range(samples):
                s.sample_once()
            cpu = (time.process_time() - cpu0) / samples
            wall = (time.perf_counter() - wall0) / samples
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    return {
        "cpu_s_per_sample": cpu,
        "wall_s_per_sample": wall,
        "cpu_share_of_one_core_at_1hz_pct": cpu * 1 * 100,
        "cpu_share_of_one_core_at_10hz_pct": cpu * 10 * 100,
    }


def main() -> None:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tiny", action="store_true", help="5 iterations, 1 round, bare and 1 Hz only: seconds")
    args = ap.parse_args()
    modes = list(MODES)
    if args.tiny:
        args.iters, args.rounds, modes = 5, 1, ["bare", "record_1hz"]
    results: dict[str, list[float]] = {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for mode in modes[r % len(modes) :] + modes[: r % len(modes)]:  # rotate who goes first
                results[mode].append(run_once(mode, args.iters, Path(tmp), r))
    med = {m: float(np.median(v)) for m, v in results.items()}
    paired = {
        m: [float((1 - results[m][r] / results["bare"][r]) * 100) for r in range(args.rounds)]
        for m in modes
        if m != "bare"
    }
    ten_hz = (1 - med["record_10hz"] / med["bare"]) * 100 if "record_10hz" in med else None
    out = {
        "benchmark": "sampler_overhead",
        "machine": {"cpus": os.cpu_count(), "loadavg_1m": os.getloadavg()[0]},
        "workload": f"smoke, {args.iters} iterations, {args.rounds} interleaved rounds",
        "images_per_s_runs": results,
        "images_per_s_median": med,
        "overhead_pct_1hz": (1 - med["record_1hz"] / med["bare"]) * 100,
        "overhead_pct_10hz": ten_hz,
        "overhead_pct_per_round": paired,
        "overhead_pct_per_round_median": {m: float(np.median(v)) for m, v in paired.items()},
        "recorder_cpu_pct_of_job_cpu": {m: float(np.median(v)) for m, v in CPU_SHARE.items() if v},
        "sampler_tick": sampler_tick_cost(30 if args.tiny else 300),
        "target": "under 1 % at 1 Hz",
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
