"""Profile window overhead: what `train.profile_iters` costs a run, on the CPU.

Runs the real workload twice, window on and off (same seed, same iterations, log line
every iteration), and prints JSON with two figures:

- `window_cost_s`: from the run with the window, the seconds of its profiled intervals
  (train lines marked `profiled`) minus as many iterations at the median time of the
  unprofiled iterations right after the window: the profiler's own cost, hooks, and the
  summary written to profile.json (`summary_s`, its steadiest part).
  `share_of_10min_pct` is that cost as a share of a 10-minute run (target <= 1 %).
- `wall_on_s`, `wall_off_s`, `measured_share_pct`: the two runs' time to train (sum of
  run_start -> run_stop) and their difference as a share of the run without the window.
  On a shared machine this moves by more than the cost itself; the first figure does not
  depend on a second run.
- `cpu_on_s`, `cpu_off_s`, `cpu_share_pct`: the CPU seconds each workload process used
  (start-up included), less moved by other people's load than wall time.

    .venv/bin/python benchmarks/profile_overhead.py [--experiment cifar] [--iters 20] [--window 5] [--set K=V]

`--set` passes a workload setting to both runs (`--set train.batch_size=2` keeps cifar's
operator graph, which is what the profiler's cost scales with, at a fraction of its compute).

`--tiny` runs it at a size that takes seconds, to check it still works (make test runs it:
tests/benchmarks/test_tiny.py); its figures mean nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.records.trainlog import read_train_log, segments, time_to_train  # noqa: E402

TEN_MINUTES_S = 600.0


def run(experiment: str, iters: int, window: int, run_dir: Path, extra: list[str]) -> tuple[Path, float]:
    """The run's folder and the CPU seconds its process used (user + system)."""
    cmd = [sys.executable, "-m", "workflows.biggan", "--experiment", experiment, "--run-dir", str(run_dir)]
    for item in (
        f"train.max_iters={iters}",
        "train.log_every=1",
        "train.checkpoint_every=0",
        "train.sample_grid=false",
        "runtime.device=cpu",
        "runtime.progress=lines",
        f"train.profile_iters={window}",
        *extra,
    ):
        cmd += ["--set", item]
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"profile_overhead: the workload exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return run_dir, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def window_cost(run_dir: Path) -> dict[str, float]:
    """Seconds the profiled intervals took beyond as many unprofiled iterations.

    The unprofiled iteration time is the median of the iterations right after the window
    (as many as it has, at least 3): on a shared machine an iteration's time drifts over a
    run by more than the window costs, so neighbours are the fair baseline. The median over
    the whole run is printed beside it.
    """
    log = read_train_log(run_dir / "train.jsonl")
    (_, _, trains), *_ = segments(log)
    profiled_s = 0.0
    steps: list[float] = []
    after: list[float] = []
    profiled_iters = 0
    for prev, line in zip(trains, trains[1:]):  # the first line holds the warm-up iteration
        seconds = float(line["wall_s"]) - float(prev["wall_s"])
        iters = int(line["iteration"]) - int(prev["iteration"])
        if line.get("profiled"):
            profiled_s += seconds
            profiled_iters += iters
        else:
            steps.append(seconds / iters)
            if profiled_iters:
                after.append(seconds / iters)
    near = statistics.median(after[: max(3, profiled_iters)]) if after else float("nan")
    whole = statistics.median(steps) if steps else float("nan")
    cost = profiled_s - profiled_iters * near
    doc = json.loads((run_dir / "profile.json").read_text())
    return {
        "profiled_iters": profiled_iters,
        "profiled_s": round(profiled_s, 3),
        "iteration_s_after_window": round(near, 4),
        "iteration_s_whole_run": round(whole, 4),
        "window_cost_s": round(cost, 3),
        "summary_s": doc.get("summary_s"),
        "profile_json_bytes": (run_dir / "profile.json").stat().st_size,
        "share_of_10min_pct": round(100 * cost / TEN_MINUTES_S, 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--experiment", default="cifar")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--window", type=int, default=5)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a workload setting, repeatable")
    ap.add_argument("--tiny", action="store_true", help="seconds, to check the script runs (figures mean nothing)")
    args = ap.parse_args()
    if args.tiny:
        args.experiment, args.iters, args.window = "smoke", 8, 3
    with tempfile.TemporaryDirectory(prefix="profile-overhead-") as tmp:
        on, cpu_on = run(args.experiment, args.iters, args.window, Path(tmp) / "on", args.set)
        off, cpu_off = run(args.experiment, args.iters, 0, Path(tmp) / "off", args.set)
        wall_on, _ = time_to_train(read_train_log(on / "train.jsonl"))
        wall_off, _ = time_to_train(read_train_log(off / "train.jsonl"))
        out = {
            "experiment": args.experiment,
            "iters": args.iters,
            "window": args.window,
            "set": args.set,
            **window_cost(on),
            "wall_on_s": round(wall_on or 0.0, 3),
            "wall_off_s": round(wall_off or 0.0, 3),
            "measured_share_pct": round(100 * ((wall_on or 0.0) - (wall_off or 0.0)) / (wall_off or 1.0), 2),
            "cpu_on_s": round(cpu_on, 2),
            "cpu_off_s": round(cpu_off, 2),
            "cpu_share_pct": round(100 * (cpu_on - cpu_off) / (cpu_off or 1.0), 2),
            "tiny": args.tiny,
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
