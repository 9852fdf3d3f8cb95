"""Results branch at scale: the stored size of one long record, and `bench history` speed.

(a) Size: a synthetic 48 h, 1 Hz, 4-GPU run (tests/synthetic_records.py, the real on-disk
    format; its samples are full-precision noise, harder to compress than NVML's
    integers) packed as `bench archive` stores it: bytes before and after, seconds to pack
    and unpack (and the CPU seconds of packing), and whether every file came back byte for
    byte. Targets: <= 5 MB, packing <= 15 s of CPU.
(b) Speed: a results branch holding 1,000 runs x 20 metrics (2 environments, 3 runs per
    commit, a 10 % step half-way) in a real git repository; `bench history` on it, timed
    as the user runs it (a new process: interpreter, imports, git, change points; wall
    time, and its CPU time, which a machine busy with other work does not inflate) and the
    work alone in this process. Target: <= 5 s on 2 cores.

Prints JSON; asserts nothing.

    .venv/bin/python benchmarks/history_scale.py [--hours 48] [--gpus 4] [--runs 1000] [--metrics 20] [--skip-size]

`--tiny` runs it at a size that takes seconds, to check it still works (make test runs it:
tests/benchmarks/test_tiny.py); its figures mean nothing.

Full size (48 h, 1 Hz, 4 GPUs; 2 shared cores, load 1.2-1.7, before and after in one run):
xz preset 6 for the samples and 3 for train.jsonl: 4.756 MB, 14.8 and 15.5 s of CPU;
preset 3 with an 8 MiB window and preset 1 (now): 4.886 MB, 11.7 and 7.6 s of CPU.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.cli import main as bench_main  # noqa: E402
from bench.gitops import results_branch  # noqa: E402
from bench.gitops.pack import pack, unpack  # noqa: E402
from tests.synthetic_records import RunSpec, write_run  # noqa: E402

GIT_ENV = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.org", "GIT_COMMITTER_NAME": "b"}
GIT_ENV["GIT_COMMITTER_EMAIL"] = "b@example.org"


def record_size(hours: float, gpus: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        run = write_run(Path(tmp), RunSpec(env="e", run_id="r", duration_s=hours * 3600, gpus=gpus))
        files, total_raw, total_stored, exact = {}, 0, 0, True
        pack_s = unpack_s = pack_cpu_s = 0.0
        for f in sorted(run.iterdir()):
            raw = f.read_bytes()
            t, cpu = time.perf_counter(), time.process_time()
            stored, data = pack(f.name, raw)
            pack_s, pack_cpu_s = pack_s + time.perf_counter() - t, pack_cpu_s + time.process_time() - cpu
            t = time.perf_counter()
            exact &= unpack(f.name, stored, data) == raw
            unpack_s += time.perf_counter() - t
            files[f.name] = {"raw_bytes": len(raw), "stored_as": stored, "stored_bytes": len(data)}
            total_raw, total_stored = total_raw + len(raw), total_stored + len(data)
    return {
        "record": f"{hours:g} h, 1 Hz, {gpus} GPUs",
        "files": files,
        "raw_mb": round(total_raw / 1e6, 2),
        "stored_mb": round(total_stored / 1e6, 3),
        "pack_s": round(pack_s, 1),
        "pack_cpu_s": round(pack_cpu_s, 1),
        "unpack_s": round(unpack_s, 1),
        "byte_for_byte": exact,
    }


def branch_with_entries(repo: Path, runs: int, metrics: int) -> None:
    """A results branch of `runs` history entries, shaped as bench archive writes them."""
    subprocess.run(["git", "init", "--quiet", str(repo)], check=True)
    rng = np.random.default_rng(1)
    blobs = []
    for i in range(runs):
        env = ("moc", "satori")[i % 2]
        commit_no = i // 6
        step = 1.1 if commit_no >= runs // 12 else 1.0
        sha = hashlib.sha1(f"c{commit_no}".encode()).hexdigest()
        entry = {
            "version": 1,
            "env": env,
            "run_id": f"run-{i:05d}",
            "commit": sha,
            "dirty": False,
            "start": 1_790_000_000 + i * 600,
            "status": "success",
            "experiment": "imagenet128",
            "metrics": {f"metric_{m:02d}": float(100 * (m + 1) * step * rng.normal(1, 0.02)) for m in range(metrics)},
            "provenance": {"code": sha, "driver": "550" if step > 1 else "535", "node": "n1"},
            "files": {},
        }
        text = json.dumps(entry, sort_keys=True, indent=1).encode()
        blobs.append((f"{results_branch.INDEX}/{env}/run-{i:05d}.json", results_branch._blob(repo, text)))
    old = dict(os.environ)
    os.environ.update(GIT_ENV)
    try:
        commit = results_branch._commit(repo, None, blobs, "results: synthetic")
    finally:
        os.environ.clear()
        os.environ.update(old)
    subprocess.run(["git", "update-ref", "refs/heads/results", commit], cwd=repo, check=True)


def history_speed(runs: int, metrics: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        branch_with_entries(repo, runs, metrics)
        t, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.run([sys.executable, "-m", "bench", "history"], cwd=repo, capture_output=True, text=True)
        cli_s, after = time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)  # bench and its git children
        if proc.returncode != 0:
            raise SystemExit(proc.stderr)
        cwd = os.getcwd()
        os.chdir(repo)
        try:
            import ruptures  # noqa: F401  (imports are counted in the process figure above)

            t = time.perf_counter()
            with redirect_stdout(io.StringIO()) as out:
                bench_main(["history"])
            in_process_s = time.perf_counter() - t
        finally:
            os.chdir(cwd)
    return {
        "runs": runs,
        "metrics": metrics,
        "series": 2 * metrics,
        "change_points": len(proc.stdout.splitlines()) - 2,
        "bench_history_s": round(cli_s, 2),
        "bench_history_cpu_s": round(cpu_s, 2),  # the same run's CPU time: what a busy shared machine does not inflate
        "load_average": round(os.getloadavg()[0], 1),
        "in_process_s": round(in_process_s, 2),
        "first_line": out.getvalue().splitlines()[0],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, default=48)
    ap.add_argument("--gpus", type=int, default=4)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--metrics", type=int, default=20)
    ap.add_argument("--tiny", action="store_true", help="12 runs, 3 metrics, 0.01 h, 1 GPU: seconds")
    ap.add_argument("--skip-size", action="store_true", help="only the history timing")
    args = ap.parse_args()
    if args.tiny:
        args.hours, args.gpus, args.runs, args.metrics = 0.01, 1, 12, 3
    figures = {"cores": os.cpu_count(), "history": history_speed(args.runs, args.metrics)}
    if not args.skip_size:
        figures["record"] = record_size(args.hours, args.gpus)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
