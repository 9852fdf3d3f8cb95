"""Results tree at scale: `compare`, `report`, `history --results` and `check` on trees of N runs.

A research group's results tree grows for years, but `bench compare` and `bench report`
show one commit's runs. This builds synthetic trees (tests/synthetic_records.py, the real
on-disk format: 60 s runs at 1 Hz, 3 environments, 15 runs per commit) of N runs, the
newest commit's 15 runs among them, and times each command as a user runs it: a fresh
`python -m bench` process, wall seconds and its peak resident memory (the operating
system's accounting of that one child). Prints one JSON line per (N, command) and a
summary line with compare's and report's time at the largest N over the smallest.
Targets: compare and report at 10,000 runs <= 1.5x their time at 15; `history --results`
over 10,000 runs <= 5 s; `check` streams (its memory does not grow with N).

    .venv/bin/python benchmarks/tree_scale.py [--sizes 15 1000 10000] [--keep DIR] [--skip-check-above N]
    .venv/bin/python benchmarks/tree_scale.py --tiny     # 15 and 45 runs: seconds (make test runs it)

Building a tree: the newest commit's 15 runs and one template run per environment are
written by the synthetic writer and their run index entries computed from the records
(bench.analysis.run_index.write_entry, as collection does); the other runs are copies of
the template (same seed: the same figures) with their own run_id, commit and start, and
the template's index entry with those fields changed. Computing 10,000
entries from their records is placement's work spread over years of collection, not
the commands'; its cost per run is printed (`index_entry_s`). `--keep DIR` keeps the
trees there and reuses them on the next call.

Full size, 2 cores shared with other jobs (load average 11: wall time is 3-7x the CPU
time and moves with the neighbours, so the CPU seconds are the steadier figure):

    runs     compare            report             history --results   check
    15       3.1 s CPU 137 MiB  6.5 s CPU 185 MiB  2.1 s CPU 105 MiB   1.6 s CPU 75 MiB
    1,000    3.1 s CPU 140 MiB  7.0 s CPU 190 MiB  2.1 s CPU 109 MiB  17.2 s CPU 81 MiB
    10,000   3.1 s CPU 163 MiB  7.8 s CPU 220 MiB  4.0 s CPU 143 MiB   (not run: linear)

compare and report at 10,000 over 15: 1.00x and 1.20x CPU (1.42x and 1.57x wall, load 11).
Before the run index, `bench compare` read every record: 24.0 s CPU on the 1,000-run tree.
The 1,000-run `check` figure is from the run before the last (its code did not change).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.analysis.run_index import index_file, stamp, write_entry  # noqa: E402
from tests.synthetic_records import RunSpec, write_run  # noqa: E402

ENVS = ("satori", "moc", "aimos")
PER_COMMIT = 15
START = 1_790_000_000.0
TEMPLATE_SEED = 99


def _sha(i: int) -> str:
    return hashlib.sha1(f"commit {i}".encode()).hexdigest()


def _filler_run(results: Path, env: str, run_id: str, sha: str, start: float, entry: dict) -> str:
    """Another commit's run: written by the synthetic writer like its environment's template
    (same seed, so the same figures); its index line is the template's entry under its own
    identity."""
    run_dir = write_run(results, RunSpec(env, run_id, sha=sha, start=start, seed=TEMPLATE_SEED))
    copied = {**entry, "run_id": run_id, "commit": sha, "start": start}
    copied["provenance"] = {**entry.get("provenance", {}), "code": sha}
    return json.dumps({"run_id": run_id, "entry": copied, "stamp": stamp(run_dir)}, sort_keys=True)


def build_tree(root: Path, n: int) -> tuple[Path, float]:
    """A results tree of `n` runs (reused when `root` holds a complete one); (tree, seconds
    per index entry computed from a record)."""
    results = root / f"n{n}" / "results"
    done = results.parent / "complete.json"
    if done.is_file():
        return results, json.loads(done.read_text())["index_entry_s"]
    shutil.rmtree(results.parent, ignore_errors=True)
    commits = max(1, -(-n // PER_COMMIT))
    newest = commits - 1
    real: list[Path] = []
    for j in range(min(PER_COMMIT, n)):  # the newest commit's runs: what compare and report show
        env = ENVS[j % len(ENVS)]
        spec = RunSpec(env, f"c{newest:05d}-{j:02d}", sha=_sha(newest), start=START + newest * 3600 + j * 70, seed=j)
        real.append(write_run(results, spec))
    templates = {}
    if n > PER_COMMIT:
        for env in ENVS:
            templates[env] = write_run(results.parent / "template", RunSpec(env, "template", seed=TEMPLATE_SEED))
    t = time.perf_counter()
    entries = {p: write_entry(p) for p in [*real, *templates.values()]}
    per_entry = (time.perf_counter() - t) / len(entries)
    made, lines = len(real), {env: [] for env in ENVS}
    for c in range(newest):
        for j in range(PER_COMMIT):
            if made >= n:
                break
            env = ENVS[j % len(ENVS)]
            start = START + c * 3600 + j * 70
            lines[env].append(_filler_run(results, env, f"c{c:05d}-{j:02d}", _sha(c), start, entries[templates[env]]))
            made += 1
    for env, env_lines in lines.items():
        if env_lines:
            with index_file(results / env).open("a") as fh:
                fh.write("\n".join(env_lines) + "\n")
    done.write_text(json.dumps({"runs": made, "index_entry_s": per_entry}) + "\n")
    return results, per_entry


def timed(args: list[str], cwd: Path) -> dict:
    """One `python -m bench ARGS` process: wall seconds, CPU seconds, peak RSS, exit code."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    t = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench", *args], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    err = proc.stderr.read() if proc.stderr else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_mib": round(usage.ru_maxrss / 1024, 1),
        "exit": proc.returncode,
        **({"stderr": err.decode(errors="replace")[-300:]} if proc.returncode not in (0, 1) else {}),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[15, 1000, 10000], help="runs per tree")
    ap.add_argument("--keep", type=Path, default=None, help="build the trees here and reuse them next time")
    ap.add_argument("--skip-check-above", type=int, default=None, metavar="N", help="no `check` on trees over N runs")
    ap.add_argument("--tiny", action="store_true", help="trees of 15 and 45 runs: a check that the script runs")
    args = ap.parse_args(argv)
    if args.tiny:
        args.sizes = [15, 45]
    root = args.keep or Path(tempfile.mkdtemp(prefix="tree-scale-"))
    root.mkdir(parents=True, exist_ok=True)
    figures: dict[int, dict[str, dict]] = {}
    try:
        for n in sorted(set(args.sizes)):
            results, per_entry = build_tree(root, n)
            work = Path(tempfile.mkdtemp(prefix="cwd-", dir=root))  # not a git checkout: no results branch
            commands = {
                "compare": ["compare", "--results", str(results)],
                "report": ["report", "--results", str(results), "--out", str(work / "reports")],
                "history --results": ["history", "--results", str(results)],
                "check": ["check", str(results)],
            }
            if args.skip_check_above is not None and n > args.skip_check_above:
                del commands["check"]
            figures[n] = {}
            for name, cmd in commands.items():
                row = timed(cmd, work)
                figures[n][name] = row
                print(json.dumps({"runs": n, "command": name, **row, "index_entry_s": round(per_entry, 4)}), flush=True)
            shutil.rmtree(work, ignore_errors=True)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    small, large = min(figures), max(figures)
    ratio = {  # CPU seconds too: a machine busy with other work inflates wall time, not CPU time
        f"{cmd}_{unit}": round(figures[large][cmd][unit] / max(figures[small][cmd][unit], 1e-9), 2)
        for cmd in ("compare", "report")
        for unit in ("wall_s", "cpu_s")
    }
    print(
        json.dumps(
            {
                "summary": f"{large} runs over {small}",
                **ratio,
                "history_s_at_largest": figures[large]["history --results"]["wall_s"],
                "targets": {"compare": "<= 1.5", "report": "<= 1.5", "history_s_at_10000": "<= 5"},
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
