"""Chaos: SIGKILL the workload, the recorder, `bench collect` and `bench report` at random
points (seeded), then run the same command again, as a user would; a full disk on a real
tmpfs too. After each trial the records pass the record checks and every finished run
has the uninterrupted run's `g_sha256`.

`ATLAS_CHAOS_TRIALS` (default 20: 2 workload, 2 recorder, 8 collect, 8 report kills) and
`ATLAS_CHAOS_SEED` (default 16) choose how many and where. Slurm's own faults (plain
scancel, requeue, the time-limit warning) are in tests/bench/targets/test_slurm.py, on
the real local Slurm; a full disk during a checkpoint, a report and the recorder's final
write in the tests of those parts.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from bench.records.contract import EXIT_DISK_FULL, read_run_json
from bench.records.read import find_runs, load_run
from tests.bench.records.test_concurrent_collect import finished_runs
from tests.fullfs import fill, mounted_tmpfs
from tests.workflows.biggan.conftest import env as workload_env
from tests.workflows.biggan.conftest import events, last, run_workload

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TRIALS = int(os.environ.get("ATLAS_CHAOS_TRIALS", "20"))
SEED = int(os.environ.get("ATLAS_CHAOS_SEED", "16"))
JOB = ("train.max_iters=10", "train.checkpoint_every=2", "train.sample_grid=false")
# Trial i kills KINDS[i % 10]: the workload and recorder trials train (tens of seconds
# each on 2 cores), collect and report ones take seconds, so 20 trials stay modest.
KINDS = ("workload", "collect", "report", "collect", "report", "recorder", "collect", "report", "collect", "report")


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> str:
    """g_sha256 of the same job run without interruption."""
    run_dir = tmp_path_factory.mktemp("reference") / "run"
    proc = run_workload(run_dir, *JOB)
    assert proc.returncode == 0, proc.stderr
    return last(events(run_dir), "run_stop")["g_sha256"]


@pytest.fixture(scope="module")
def local_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    runs = tmp_path_factory.mktemp("runs")
    return runs, finished_runs(runs / "local", 4)


def bench(*args: str) -> list[str]:
    return [sys.executable, "-m", "bench", *args]


def recorded(run_dir: Path) -> list[str]:
    cmd = bench("record", "--run-dir", str(run_dir), "--env", "local", "--interval", "0.2", "--")
    cmd += [sys.executable, "-m", "workflows.biggan", "--experiment", "smoke", "--run-dir", str(run_dir)]
    for item in JOB:
        cmd += ["--set", item]
    return cmd


def kill_after(proc: subprocess.Popen, delay: float, victim: str = "self") -> bool:
    """SIGKILL `proc` (or its workload child) after `delay` s; False if it ended first."""
    end = time.monotonic() + delay
    while time.monotonic() < end:
        if proc.poll() is not None:
            return False
        time.sleep(0.05)
    try:
        target = psutil.Process(proc.pid)
        if victim == "child":
            children = target.children()
            if not children:
                return False
            target = children[0]
        target.send_signal(signal.SIGKILL)
    except psutil.NoSuchProcess:
        return False
    return True


def run_to_the_end(cmd: list[str], env: dict[str, str], tries: int = 4) -> subprocess.CompletedProcess[str]:
    """Run the same command again until it succeeds (a resume, a second collect)."""
    proc = None
    for _ in range(tries):
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        if proc.returncode == 0:
            return proc
    assert proc is not None
    return proc


def trial_record(rng: random.Random, tmp: Path, victim: str, reference: str) -> None:
    run_dir = tmp / "run"
    env = workload_env()
    proc = subprocess.Popen(recorded(run_dir), cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kill_after(proc, rng.uniform(0.5, 8.0), "child" if victim == "workload" else "self")
    proc.wait(timeout=120)
    time.sleep(0.5)  # a recorder killed hard: its workload stops on the parent-death signal
    done = run_to_the_end(recorded(run_dir), env)
    assert done.returncode == 0, done.stderr[-2000:]
    record = load_run(run_dir, collected=False)
    assert record.schema_problems == [], record.schema_problems
    assert read_run_json(run_dir)["exit"]["status"] == "success"
    assert last(events(run_dir), "run_stop")["g_sha256"] == reference


def trial_collect(rng: random.Random, tmp: Path, local_runs: tuple[Path, list[str]]) -> None:
    runs, ids = local_runs
    results = tmp / "results"
    env = dict(workload_env(), ATLAS_RUNS_DIR=str(runs))
    cmd = bench("collect", "--env", "local", "--results", str(results))
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kill_after(proc, rng.uniform(0.2, 4.0))
    proc.wait(timeout=60)
    done = run_to_the_end(cmd, env, tries=1)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (results / "local").iterdir()) == sorted(ids)  # nothing hidden left
    for run in find_runs(results):
        assert run.schema_problems == [], (run.path, run.schema_problems)


def trial_report(rng: random.Random, tmp: Path, local_runs: tuple[Path, list[str]]) -> None:
    trial_collect(rng, tmp, local_runs)
    results, out = tmp / "results", tmp / "reports"
    env = workload_env()
    cmd = bench("report", "--results", str(results), "--out", str(out))
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kill_after(proc, rng.uniform(0.5, 6.0))
    proc.wait(timeout=120)
    done = run_to_the_end(cmd, env, tries=1)
    assert done.returncode == 0, done.stderr
    folders = [p for p in out.iterdir() if p.is_dir()]
    assert len(folders) == 1 and not folders[0].name.startswith("."), folders
    for name in ("README.md", "runs.csv", "summary.json"):
        assert (folders[0] / name).stat().st_size > 0
    assert folders[0].name in (out / "README.md").read_text()


@pytest.mark.parametrize("number", range(TRIALS))
def test_a_random_kill_loses_nothing(number: int, reference: str, local_runs, tmp_path: Path) -> None:
    rng = random.Random(SEED * 1000 + number)
    kind = KINDS[number % len(KINDS)]
    if kind in ("workload", "recorder"):
        trial_record(rng, tmp_path, kind, reference)
    elif kind == "collect":
        trial_collect(rng, tmp_path, local_runs)
    else:
        trial_report(rng, tmp_path, local_runs)


def test_collect_into_a_full_disk_fails_in_one_line_and_succeeds_once_freed(local_runs, tmp_path: Path) -> None:
    runs, ids = local_runs
    with mounted_tmpfs(tmp_path / "fs", "4m") as fs:
        results = fs / "results"
        ballast = fill(fs, leave=2048)
        env = dict(workload_env(), ATLAS_RUNS_DIR=str(runs))
        cmd = bench("collect", "--env", "local", "--results", str(results))
        full = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
        assert full.returncode == EXIT_DISK_FULL, full.stderr
        assert "Traceback" not in full.stderr and full.stderr.count("\n") == 1
        assert "No space left on device" in full.stderr and str(results) in full.stderr
        ballast.unlink()
        done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert sorted(p.name for p in (results / "local").iterdir()) == sorted(ids)
        assert all(run.schema_problems == [] for run in find_runs(results))
