"""Write sheets shaped like a study's spreadsheet export, for two platforms.

A study measured one training job on two platforms and exported its spreadsheet sheet
by sheet, as studies do: a GPU sheet of utilisation fractions with no time column (one
row per minute or half minute, as the study's notes say), and CPU and memory sheets
copied from `sar -u` and `sar -r` with only the time of day, printed by a 12-hour
clock whose AM/PM was lost, across noon and midnight. GPU 0 of each node ran another
tenant's job; the study's job had GPU 1. `platform-a.yaml` and `platform-b.yaml` say
how to read each platform's sheets (docs/import-a-study.md walks through it):

    python examples/study/make_sheets.py [--out examples/study]

The values are random but fixed (seeded), so every run writes the same bytes.
"""

from __future__ import annotations

import argparse
import csv
import random
from datetime import datetime, timedelta
from pathlib import Path


def _clock(moment: datetime) -> str:
    """The time of day as the sheets print it: 12-hour, no AM/PM (13:05 -> 01:05:00)."""
    return f"{(moment.hour % 12) or 12:02d}:{moment.minute:02d}:{moment.second:02d}"


def _number(value: float, digits: int, decimal: str) -> str:
    return f"{value:.{digits}f}".replace(".", decimal)


def write_platform(folder: Path, start: datetime, rows: int, interval_s: int, seed: int, decimal: str) -> None:
    """gpu.csv, cpu.csv and memory.csv of one platform's run."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    delimiter = ";" if decimal == "," else ","
    times = [start + timedelta(seconds=i * interval_s) for i in range(rows)]
    busy = 0.55 + 0.3 * rng.random()  # how busy this platform keeps the job's GPU
    with (folder / "gpu.csv").open("w", newline="") as fh:
        out = csv.writer(fh, delimiter=delimiter, lineterminator="\n")
        out.writerow(["Sample", "GPU0 util", "GPU1 util", "GPU1 memory used (MiB)"])
        for i in range(rows):
            gpu1 = "" if i % 97 == 13 else _number(min(1.0, max(0.0, rng.gauss(busy, 0.08))), 3, decimal)
            gpu0 = _number(rng.random(), 3, decimal)
            out.writerow([i + 1, gpu0, gpu1, _number(20000 + rng.gauss(0, 300), 0, decimal)])
    with (folder / "cpu.csv").open("w", newline="") as fh:
        out = csv.writer(fh, delimiter=delimiter, lineterminator="\n")
        out.writerow(["Time", "CPU", "%user", "%nice", "%system", "%iowait", "%steal", "%idle"])
        for t in times:
            user, system, iowait = rng.uniform(20, 45), rng.uniform(2, 8), rng.uniform(0, 3)
            idle = 100.0 - user - system - iowait
            cells = [user, 0.0, system, iowait, 0.0, idle]
            out.writerow([_clock(t), "all", *(_number(v, 2, decimal) for v in cells)])
    with (folder / "memory.csv").open("w", newline="") as fh:
        out = csv.writer(fh, delimiter=delimiter, lineterminator="\n")
        out.writerow(["Time", "kbmemfree", "kbmemused", "%memused"])
        total_kb = 527_951_620
        for t in times:
            used = int(rng.uniform(0.2, 0.3) * total_kb)
            out.writerow([_clock(t), total_kb - used, used, _number(100.0 * used / total_kb, 2, decimal)])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent, help="folder for platform-a/, platform-b/")
    args = parser.parse_args(argv)
    # A: 11:30 AM to 00:29 the next day, every minute; B: 10:00 AM to 00:29:30, every 30 s.
    write_platform(args.out / "platform-a", datetime(2026, 3, 2, 11, 30), 780, 60, seed=1, decimal=".")
    write_platform(args.out / "platform-b", datetime(2026, 3, 9, 10, 0), 1740, 30, seed=2, decimal=",")
    print(f"wrote {args.out / 'platform-a'} and {args.out / 'platform-b'} (gpu.csv, cpu.csv, memory.csv)")


if __name__ == "__main__":
    main()
