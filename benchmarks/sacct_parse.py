"""How long reading sacct's answer takes as the lines grow: it must stay linear (issue 31).

    python benchmarks/sacct_parse.py [--lines 300 3000 9000 100000] [--repeat 3]

Builds `sacct --parsable2 --noconvert` text as collection receives it (a job line, its
batch step and extern step, per job: the shape of bench/targets/slurm_accounting.py's
tests) and times `from_sacct` (parse + the accounting block) on it. Prints one JSON line
per size (best of `--repeat` wall seconds, CPU seconds of this process: the figure
to read on a shared machine, seconds per 1,000 lines) and asserts nothing: the
timings are figures, not tests.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.targets.slurm_accounting import SACCT_FIELDS, from_sacct  # noqa: E402


def sacct_text(lines: int) -> str:
    """About `lines` lines of sacct output: a job and its batch and extern steps, per job."""
    out = [SACCT_FIELDS.replace(",", "|")]
    for job in range(1, lines // 3 + 2):
        usage = f"cpu=00:10:00,gres/gpumem={job % 80}G,gres/gpuutil={job % 100},mem=2G"
        alloc = "billing=16,cpu=16,gres/gpu=1,mem=128G,node=1"
        out += [
            f"{job}|atlas-{job}|gpu{job % 64:03d}|{600 + job % 50}|{alloc}|||{1000 + job}",
            f"{job}.batch|batch|gpu{job % 64:03d}|{599 + job % 50}|cpu=16,gres/gpu=1|{usage}|{usage}|{1000 + job}",
            f"{job}.extern|extern|gpu{job % 64:03d}|{600 + job % 50}|cpu=16|cpu=00:00:00|cpu=00:00:00|0",
        ]
    return "\n".join(out[: lines + 1]) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, nargs="+", default=[300, 3000, 9000, 100000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for n in args.lines:
        text = sacct_text(n)
        best = cpu = float("inf")
        for _ in range(args.repeat):
            start, start_cpu = time.perf_counter(), time.process_time()
            block = from_sacct({"rc": 0, "stdout": text, "stderr": ""})
            best = min(best, time.perf_counter() - start)
            cpu = min(cpu, time.process_time() - start_cpu)
        assert block["gpu_util_mean_pct"] is not None  # the text was read, not refused
        print(
            json.dumps(
                {
                    "lines": n,
                    "seconds": round(best, 4),
                    "cpu_seconds": round(cpu, 4),
                    "s_per_1000_lines": round(best / n * 1000, 5),
                }
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
