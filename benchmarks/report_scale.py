"""Report at scale: 2 environments x 3 runs x 48 h sampled at 1 Hz.

Writes synthetic records in the real on-disk format (tests/synthetic_records.py) and their
run index entries (as collection does at placement), then times, in rounds, (a) just
reading every file with pandas and (b) `bench report` on them as a new process. Prints
JSON; asserts nothing. Target: report under 10 s and under 2x the read time on 2 cores.
Each environment's cost rates are frozen into its records, as collection does.

    .venv/bin/python benchmarks/report_scale.py [--hours 48] [--keep DIR] [--rounds 3] [--baseline CHECKOUT] [--tiny]

`--baseline` times another checkout's report in the same rounds (order alternating), so
before and after are measured side by side on a shared machine. `--keep DIR` reuses the
records there. `--tiny` (0.01 h: 36 rows a run, one round) checks in seconds that the
script still runs; make test does so (tests/benchmarks/test_tiny.py).

Full size (48 h, 2 cores), idle machine, 7 rounds alternating with the commit before
(--baseline), 2026-11-28: report/read median 2.09x (1.99-2.31x) against 2.43x (2.28-2.52x)
before; report 3.0-3.4 s against 3.5-3.8 s, the pandas read 1.4-1.5 s. A second run on a
noisier machine: 2.20x (1.78-2.37x) against 2.59x. Report bytes unchanged. What changed in
that round: a reader child hands its records back out of band (the samples' columns after
the pickle, mapped by the report rather than copied; in band they cost about 0.2 s each
way with both cores busy), and it computes the per-run figures of what it reads (kept with
the record). Earlier rounds: records read by a forked child and the report's own process,
each taking the largest left from one queue (bench.analysis.parallel), while the report
imports scipy.stats and matplotlib; the samples parsed once; charts drawn by forked
children; savefig drawing each chart once; run index entries written at placement.

The goal of 2x is not met reliably. The report spends about 5.3 s of CPU (its own process
2.4, children 2.9): importing scipy.stats and matplotlib 0.6, reading the six records 2.9
(about what pandas' own read of them costs), per-run figures 0.3, handing records back 0.3,
the eight charts 0.9 (a third of that is tight_layout), comparing and writing 0.3. On two
cores that is 2.65 s at best (1.8x); one core idles about 0.8 s in all (before the fork,
during the last record, in the serial steps after reading, and while the records are freed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.analysis.run_index import index_placed  # noqa: E402
from tests.synthetic_records import RunSpec, write_run  # noqa: E402

COSTS = {
    "satori": {
        "model": "onprem",
        "electricity_usd_per_kwh": 0.0839,
        "pue": 1.2,
        "node_capex_usd": 50000,
        "gpus_per_node": 4,
    },
    "moc": {"model": "cloud", "usd_per_gpu_hour": 1.214},
}


def read_all(results: Path) -> float:
    t = time.perf_counter()
    for f in sorted(results.rglob("samples-*.csv")):
        pd.read_csv(f)
    for f in sorted(results.rglob("train.jsonl")):
        pd.read_json(f, lines=True)
    for f in sorted(results.rglob("run.json")):
        json.loads(f.read_text())
    return time.perf_counter() - t


# `bench report` as a new process of `checkout`: pandas and the command's module imported
# before the clock starts, as this script has them (everything else the report imports counts).
CHILD = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
import pandas
from bench.commands.report import write_report
t = time.perf_counter()
folder = write_report(Path(sys.argv[2]), Path(sys.argv[3])).folder
print(json.dumps({"report_s": time.perf_counter() - t, "folder": str(folder)}))
"""


def report_in_child(checkout: Path, results: Path, out: Path) -> tuple[float, Path]:
    """(seconds, report folder) of one report by the code of `checkout`, in a new process."""
    shutil.rmtree(out, ignore_errors=True)
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(checkout), str(results), str(out)], capture_output=True, text=True
    )
    if proc.returncode != 0:
        sys.exit(f"report_scale: the report of {checkout} failed:\n{proc.stderr[-2000:]}")
    done = json.loads(proc.stdout.splitlines()[-1])
    return done["report_s"], Path(done["folder"])


def write_records(results: Path, hours: float) -> None:
    for i in range(3):
        write_run(
            results,
            RunSpec(
                "satori",
                f"s{i}",
                seed=i,
                gpus=4,
                duration_s=hours * 3600,
                images_per_s=900,
                start=1.79e9 + i * 200000,
                cost=COSTS["satori"],
            ),
        )
        write_run(
            results,
            RunSpec(
                "moc",
                f"m{i}",
                seed=10 + i,
                gpus=1,
                duration_s=hours * 3600,
                images_per_s=260,
                gpu_util=35,
                start=1.79e9 + i * 200000 + 1000,
                cost=COSTS["moc"],
            ),
        )


def _summary(values: list[float]) -> dict[str, float]:
    return {"min": round(min(values), 2), "median": round(statistics.median(values), 2)}


def main() -> None:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, default=48.0)
    ap.add_argument("--tiny", action="store_true", help="0.01 h runs, one round: a check that the script runs")
    ap.add_argument("--keep", type=Path, default=None, help="write the records here and keep them (reused if there)")
    ap.add_argument("--rounds", type=int, default=None, help="read and report this many times (default 3; --tiny 1)")
    ap.add_argument(
        "--baseline", type=Path, default=None, help="a checkout of other code: its report timed in the same rounds"
    )
    args = ap.parse_args()
    if args.tiny:
        args.hours = 0.01
    rounds = args.rounds or (1 if args.tiny else 3)
    if args.baseline is not None and not (args.baseline / "bench" / "commands" / "report.py").is_file():
        sys.exit(
            f"report_scale: --baseline {args.baseline} is not a checkout of this project (no bench/commands/report.py)"
        )
    root = args.keep or Path(tempfile.mkdtemp(prefix="report-scale-"))
    results, out = root / "results", root / "reports"
    reused = results.is_dir() and len(list(results.glob("*/*/run.json"))) == 6
    t = time.perf_counter()
    if not reused:
        shutil.rmtree(results, ignore_errors=True)
        write_records(results, args.hours)
    gen_s = time.perf_counter() - t
    t = time.perf_counter()
    index_placed(sorted(p.parent for p in results.glob("*/*/run.json")))  # as collection does, once per run
    index_s = time.perf_counter() - t
    size = sum(f.stat().st_size for f in results.rglob("*") if f.is_file() and not f.name.startswith("."))
    rows = sum(sum(1 for _ in f.open()) - 1 for f in results.rglob("samples-*.csv"))
    sides = {"this": REPO} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    per_round = []
    for n in range(rounds):
        read_s = min(read_all(results) for _ in range(2))  # second pass: warm page cache, as for the report
        row: dict[str, float] = {"pandas_read_s": round(read_s, 3), "loadavg_1m": round(os.getloadavg()[0], 2)}
        for side in sorted(sides, reverse=n % 2 == 1):  # alternating which goes first
            report_s, folder = report_in_child(sides[side], results, out / side)
            row[f"{side}_report_s"] = round(report_s, 3)
            row[f"{side}_report_over_read"] = round(report_s / read_s, 2)
            if side == "this":
                folder_bytes = sum(f.stat().st_size for f in folder.iterdir())
        per_round.append(row)
    ratio = [r["this_report_over_read"] for r in per_round]
    result = {
        "benchmark": "report_scale",
        "machine": {"cpus": os.cpu_count(), "loadavg_1m": os.getloadavg()[0]},
        "records": {
            "envs": 2,
            "runs_per_env": 3,
            "hours": args.hours,
            "sample_rows": rows,
            "bytes": size,
            "generate_s": round(gen_s, 2),
            "reused": reused,
            "index_s": round(index_s, 2),
        },
        "pandas_read_s": round(statistics.median(r["pandas_read_s"] for r in per_round), 3),
        "report_s": round(statistics.median(r["this_report_s"] for r in per_round), 3),
        "report_over_read": round(statistics.median(ratio), 2),
        "report_over_read_min": round(min(ratio), 2),
        "report_folder_bytes": folder_bytes,
        "rounds": per_round,
        "targets": {"report_s": "< 10", "report_over_read": "<= 2", "report_folder_bytes": "< 1,000,000"},
    }
    if args.baseline:
        result["baseline"] = {
            "checkout": str(args.baseline),
            "report_over_read": _summary([r["baseline_report_over_read"] for r in per_round]),
            "this": _summary(ratio),
        }
    print(json.dumps(result, indent=2))
    if args.keep is None:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
