"""What gathering a run's timeline costs at collection, per run. Target: <= 1 s.

Collection does, once per run: read `train.jsonl` (the job's marks: workload start, first
and last iteration, checkpoints), ask the kind for its marks (here the real `local` kind:
it reads `submit.json`), and cut the phases (bench.records.timeline.collected_timeline).
Timed on synthetic records in the real on-disk format (tests/synthetic_records.py), from a
smoke-sized run up to a 48-hour one logging every 5 s; the median of `--repeats` timings.

Prints JSON; asserts nothing.

    .venv/bin/python benchmarks/timeline_overhead.py [--hours 0.02 1 48] [--repeats 5]

`--tiny` runs it at a size that takes seconds, to check it still works (make test runs it:
tests/benchmarks/test_tiny.py); its figures mean nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.environments.load import load_env  # noqa: E402
from bench.records.contract import TRAIN_JSONL, read_run_json  # noqa: E402
from bench.records.timeline import collected_timeline, marks_log  # noqa: E402
from bench.targets import target_for  # noqa: E402
from tests.synthetic_records import RunSpec, write_run  # noqa: E402


def one_size(hours: float, repeats: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "clusters" / "loc").mkdir(parents=True)
        (root / "clusters" / "loc" / "env.yaml").write_text(f"kind: local\nruns_dir: {root / 'runs'}\n")
        target = target_for(load_env("loc", root / "clusters"))
        run = write_run(root / "results", RunSpec(env="loc", run_id="r1", duration_s=hours * 3600))
        (target.runs_dir / "r1").mkdir(parents=True)
        submit = {"run_id": "r1", "submit_time": 1_789_999_990.0, "spawned_time": 1_789_999_990.01, "pid": 2}
        (target.runs_dir / "r1" / "submit.json").write_text(json.dumps(submit))
        record = read_run_json(run)
        timings = []
        for _ in range(repeats):
            start = time.perf_counter()
            timeline, _ = collected_timeline(
                record, marks_log(run / TRAIN_JSONL), lambda: target.timeline_marks("r1", {}), time.time()
            )
            timings.append(time.perf_counter() - start)
        lines = sum(1 for _ in (run / TRAIN_JSONL).open())
        known = sum(p["seconds"] is not None for p in timeline["phases"])
    return {
        "hours": hours,
        "train_jsonl_lines": lines,
        "seconds_per_run_median": round(statistics.median(timings), 4),
        "seconds_per_run_max": round(max(timings), 4),
        "phases_known": known,
        "within_target_1_s": statistics.median(timings) <= 1.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=float, nargs="+", default=[0.02, 1.0, 48.0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tiny", action="store_true", help="one 0.02 h record, timed once: seconds")
    args = parser.parse_args()
    if args.tiny:
        args.hours, args.repeats = [0.02], 1
    print(json.dumps([one_size(h, args.repeats) for h in args.hours], indent=2))


if __name__ == "__main__":
    main()
