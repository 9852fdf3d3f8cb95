"""Chaos: SIGKILL the workload, the recorder, `bench collect` and `bench report` at random
points (seeded), then run the same command again, as a user would; a full disk on a real
tmpfs too. After each trial the records pass the record checks and every finished run
has the uninterrupted run's `g_sha256`.

Each trial asserts that its kill landed (the process was alive and had not finished;
otherwise the point is redrawn, up to REDRAWS times, and a trial whose kill never lands
fails). A killed training run must resume on the FIRST rerun (no retries), from the newest
checkpoint on disk when there is one (`resumed_from` names it, the second segment starts
at its iteration; the work lost is named), and its record must count exactly two attempts,
time to train and wall time over both attempts (not the gap between; the wall time equal
to the sum of the attempts' spans, the killed one measured to the test's own kill), and a
cost per second equal to the uninterrupted run's. tests/chaos/test_mutants.py applies the
mutants a good test must catch (never resume, oldest checkpoint, the last attempt only,
the wall of the last attempt only) to a scratch copy and expects these trials to fail.

`ATLAS_CHAOS_TRIALS` (default 10: 1 workload, 1 recorder, 4 collect, 4 report kills; `make
chaos` runs 60) and `ATLAS_CHAOS_SEED` (default 16) choose how many and where. Slurm's own
faults (plain scancel, requeue, the time-limit warning) are in
tests/bench/targets/test_slurm.py, on the real local Slurm; a full disk during a
checkpoint, a report and the recorder's final write in the tests of those parts.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest

from bench.analysis.metrics import run_metrics
from bench.analysis.run_index import INDEX_FILE
from bench.environments.facts import environment_facts
from bench.environments.load import load_env
from bench.records.contract import EXIT_DISK_FULL, read_run_json
from bench.records.place import place_run
from bench.records.read import find_runs, load_run
from bench.records.trainlog import time_to_train
from tests.conftest import copy_recorded_runs
from tests.fullfs import fill, mounted_tmpfs
from tests.workflows.biggan.conftest import env as workload_env
from tests.workflows.biggan.conftest import events, last

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TRIALS = int(os.environ.get("ATLAS_CHAOS_TRIALS", "10"))
SEED = int(os.environ.get("ATLAS_CHAOS_SEED", "16"))
# The killed attempt's span as bench reads it (its end, or its last sample: one every 0.2 s)
# against the moment the test sent SIGKILL; the recorder notices a killed workload within it.
WALL_SLACK_S = 1.5
REDRAWS = 4  # a kill that does not land (the process had ended) is redrawn this many times
JOB = ("train.max_iters=10", "train.checkpoint_every=2", "train.sample_grid=false")
# Trial i kills KINDS[i % 10]: the workload and recorder trials train (tens of seconds
# each on 2 cores), collect and report ones take seconds, so 20 trials stay modest.
KINDS = ("workload", "collect", "report", "collect", "report", "recorder", "collect", "report", "collect", "report")


@dataclass(frozen=True)
class Reference:
    """The same job recorded without interruption: its digest, work and cost per second."""

    g_sha256: str
    images_seen: float
    iterations: int
    usd_per_s: float | None


# A reference made once by a parent session (tests/chaos/test_mutants.py: a JSON file of
# Reference's fields): the mutated copies it runs are judged against the unmutated code's run.
REFERENCE_VARIABLE = "ATLAS_CHAOS_REFERENCE"


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    return Reference(**json.loads(reference_file_of_session(tmp_path_factory).read_text()))


def reference_file_of_session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reference as a JSON file of Reference's fields, trained once per test session:
    this module and tests/chaos/test_mutants.py, on whichever xdist workers they run, read
    the one the first of them made (under a lock); a parent session's (REFERENCE_VARIABLE) wins."""
    given = os.environ.get(REFERENCE_VARIABLE)
    if given:
        return Path(given)
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's folder, above each worker's own
    path = root / "chaos-reference.json"
    with open(root / "chaos-reference.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not path.exists():
            made = root / "chaos-reference.json.part"
            made.write_text(json.dumps(dataclasses.asdict(make_reference(tmp_path_factory))))
            made.replace(path)
    return path


def make_reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    """The job recorded without interruption, collected as env `local`."""
    run_dir = tmp_path_factory.mktemp("reference") / "run"
    proc = subprocess.run(recorded(run_dir), cwd=REPO, env=workload_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    stop = last(events(run_dir), "run_stop")
    metrics = placed_metrics(run_dir, tmp_path_factory.mktemp("reference-results"))
    return Reference(stop["g_sha256"], float(stop["images_seen"]), int(stop["iteration"]), usd_per_s(metrics))


def placed_metrics(run_dir: Path, results: Path) -> dict[str, float | None]:
    """The run's catalogue figures once collected into `results` as env `local` (its cost rates)."""
    env = load_env("local")
    placed = place_run(results, environment_facts(env), run_dir.name, lambda into: copy_run_files(run_dir, into))
    return dict(run_metrics(load_run(placed.path, "local")).values)


def copy_run_files(run_dir: Path, into: Path) -> dict:
    for name in ("run.json", "train.jsonl", *(p.name for p in run_dir.glob("samples-*.csv"))):
        shutil.copy2(run_dir / name, into / name)
    return {}


def usd_per_s(metrics: dict[str, float | None]) -> float | None:
    usd, wall = metrics.get("cost_usd"), metrics.get("wall_s")
    return usd / wall if usd is not None and wall else None


@pytest.fixture(scope="module")
def local_runs(recorded_local_runs, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """Four finished local runs for the collect and report trials (copies of the session's)."""
    runs = tmp_path_factory.mktemp("runs")
    return runs, copy_recorded_runs(recorded_local_runs, runs, 4)


def bench(*args: str) -> list[str]:
    return [sys.executable, "-m", "bench", *args]


def recorded(run_dir: Path) -> list[str]:
    cmd = bench("record", "--run-dir", str(run_dir), "--env", "local", "--interval", "0.2", "--")
    cmd += [sys.executable, "-m", "workflows.biggan", "--experiment", "smoke", "--run-dir", str(run_dir)]
    for item in JOB:
        cmd += ["--set", item]
    return cmd


def kill_after(proc: subprocess.Popen, delay: float) -> bool:
    """SIGKILL `proc` after `delay` s; True only if it was still running (the kill landed)."""
    end = time.monotonic() + delay
    while time.monotonic() < end:
        if proc.poll() is not None:
            return False
        time.sleep(0.02)
    if proc.poll() is not None:  # ended (and now reaped): a signal now would land nowhere
        return False
    proc.send_signal(signal.SIGKILL)
    return True


def run_once(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The same command again, once (a second collect, a second report): no retries."""
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def killed_command(rng: random.Random, cmd: list[str], env: dict[str, str], low: float, high: float, fresh) -> dict:
    """Start `cmd`, SIGKILL it after a random delay; redraw (shorter) until the kill lands."""
    for draw in range(REDRAWS):
        fresh()
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        landed = kill_after(proc, rng.uniform(low, high) / 2**draw)
        proc.wait(timeout=120)
        if landed:
            return {"landed": True, "draws": draw + 1}
    pytest.fail(f"no kill of {cmd[3]} landed in {REDRAWS} draws (it always ended first)")


def checkpoint_iterations(run_dir: Path) -> list[int]:
    return sorted(int(p.name[5:13]) for p in (run_dir / "checkpoints").glob("ckpt-*.pt"))


def kill_at(
    proc: subprocess.Popen, run_dir: Path, after_checkpoints: int, victim: str, then: float, killed_at: list[float]
) -> bool:
    """SIGKILL the recorder (or its workload) once train.jsonl shows `after_checkpoints`
    checkpoint events (0: right after run_start) and no run_stop; True if the kill landed:
    the process was alive and its job had not finished. Waits for the process tree to end."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        evts = events(run_dir) if (run_dir / "train.jsonl").exists() else []
        if any(e["event"] == "run_stop" for e in evts):
            return False
        if evts and sum(e["event"] == "checkpoint" for e in evts) >= after_checkpoints:
            break
        time.sleep(0.02)
    time.sleep(then)  # somewhere between two checkpoints: the work since the last one is lost
    try:
        recorder = psutil.Process(proc.pid)
        tree = recorder.children(recursive=True)
        target = (
            recorder if victim == "recorder" else next((c for c in tree if "workflows.biggan" in c.cmdline()), None)
        )
        if target is None or proc.poll() is not None:
            return False
        target.send_signal(signal.SIGKILL)
        killed_at[0] = time.time()
    except psutil.NoSuchProcess:
        return False
    proc.wait(timeout=120)
    psutil.wait_procs(tree, timeout=60)  # a recorder killed hard: its workload stops on the parent-death signal
    stops = [e for e in events(run_dir) if e["event"] == "run_stop"]
    return not any(e.get("status") == "success" for e in stops)


def trial_record(rng: random.Random, tmp: Path, victim: str, reference: Reference) -> dict[str, Any]:
    """Kill a recorded training run at a random checkpoint count, resume it once, check the record."""
    env = workload_env()
    for draw in range(REDRAWS):
        run_dir = tmp / f"run-{draw}"
        after = rng.randint(0, 4)  # checkpoint_every=2, max_iters=10: 5 checkpoints; 0 = before the first
        proc = subprocess.Popen(
            recorded(run_dir), cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            killed_at = [time.time()]
            landed = kill_at(proc, run_dir, after, victim, rng.uniform(0.0, 1.0), killed_at)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if landed:
            break
    else:
        pytest.fail(f"no {victim} kill landed in {REDRAWS} draws")
    killed = events(run_dir)
    saved = checkpoint_iterations(run_dir)
    done_before = max([e["iteration"] for e in killed if e["event"] in ("train", "checkpoint")], default=0)
    resume = subprocess.run(recorded(run_dir), cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert resume.returncode == 0, f"the first resume failed (no reruns allowed): {resume.stderr[-2000:]}"
    evts = events(run_dir)
    starts = [e for e in evts if e["event"] == "run_start"]
    assert len(starts) == 2, f"expected the killed attempt and one resume, got {len(starts)} run_start events"
    second = starts[1]
    if saved:
        assert second["resumed_from"] == f"ckpt-{saved[-1]:08d}.pt", (second["resumed_from"], saved)
        assert second["iteration"] == saved[-1]
    else:
        assert second["resumed_from"] is None and second["iteration"] == 0
    later = [e["iteration"] for e in evts[evts.index(second) :] if e["event"] in ("train", "checkpoint")]
    assert later and min(later) > second["iteration"], "the resumed segment must continue after its checkpoint"
    lost = done_before - (saved[-1] if saved else 0)
    assert lost >= 0, (done_before, saved)
    resumed_at = [e for e in killed if e["event"] == "checkpoint" and saved and e["iteration"] == saved[-1]]
    since = float((resumed_at or [e for e in killed if e["event"] == "run_start"])[-1]["time"])
    lost_s = max(0.0, killed_at[0] - since)  # training time after the checkpoint it resumed from: redone
    record = load_run(run_dir, collected=False)
    assert record.schema_problems == [], record.schema_problems
    meta = read_run_json(run_dir)
    assert meta["exit"]["status"] == "success" and len(meta["previous_attempts"]) == 1
    stop = last(evts, "run_stop")
    assert stop["g_sha256"] == reference.g_sha256
    assert stop["iteration"] == reference.iterations and float(stop["images_seen"]) == reference.images_seen
    # attempts, time and cost over both attempts, never the gap between them
    metrics = placed_metrics(run_dir, tmp / "results")
    first_start, second_start = meta["previous_attempts"][0]["start_time"], meta["start_time"]
    assert metrics["attempts"] == 2
    assert metrics["wall_s"] is not None and metrics["wall_s"] <= meta["end_time"] - first_start + 1e-6
    assert metrics["wall_s"] >= meta["end_time"] - second_start - 1e-6  # the resumed attempt at least
    # wall time is the sum of the attempts' spans, each read here on the test's own clock:
    # the killed attempt from its start to the kill (its last sample or end within the
    # slack), the resumed one from its start to its end; never the last attempt's alone
    spans = (killed_at[0] - first_start) + (meta["end_time"] - second_start)
    assert spans - WALL_SLACK_S <= metrics["wall_s"] <= spans + WALL_SLACK_S, (metrics["wall_s"], spans)
    ttt, _ = time_to_train(record.train)
    assert ttt is not None and ttt <= metrics["wall_s"] + 1e-6
    assert ttt >= float(stop["time"]) - float(second["time"]) - 1e-6
    if reference.usd_per_s is not None:
        assert usd_per_s(metrics) == pytest.approx(reference.usd_per_s, rel=1e-6)  # every attempt's time, same rate
    return {
        "landed": True,
        "draws": draw + 1,
        "resumed_from": second["resumed_from"],
        "lost_iterations": lost,
        "lost_s": round(lost_s, 2),
    }


def trial_collect(rng: random.Random, tmp: Path, local_runs: tuple[Path, list[str]]) -> dict[str, Any]:
    runs, ids = local_runs
    results = tmp / "results"
    env = dict(workload_env(), ATLAS_RUNS_DIR=str(runs))
    cmd = bench("collect", "--env", "local", "--results", str(results))
    outcome = killed_command(rng, cmd, env, 0.3, 3.0, lambda: shutil.rmtree(results, ignore_errors=True))
    done = run_once(cmd, env)
    assert done.returncode == 0, done.stderr
    placed = sorted(p.name for p in (results / "local").iterdir() if p.name != INDEX_FILE)
    assert placed == sorted(ids)  # nothing hidden left
    for run in find_runs(results):
        assert run.schema_problems == [], (run.path, run.schema_problems)
    return outcome


def trial_report(rng: random.Random, tmp: Path, local_runs: tuple[Path, list[str]]) -> dict[str, Any]:
    runs, ids = local_runs
    results, out = tmp / "results", tmp / "reports"
    env = dict(workload_env(), ATLAS_RUNS_DIR=str(runs))
    assert run_once(bench("collect", "--env", "local", "--results", str(results)), env).returncode == 0
    cmd = bench("report", "--results", str(results), "--out", str(out))
    outcome = killed_command(rng, cmd, env, 0.5, 5.0, lambda: shutil.rmtree(out, ignore_errors=True))
    done = run_once(cmd, env)
    assert done.returncode == 0, done.stderr
    folders = [p for p in out.iterdir() if p.is_dir()]
    assert len(folders) == 1 and not folders[0].name.startswith("."), folders
    for name in ("README.md", "runs.csv", "summary.json"):
        assert (folders[0] / name).stat().st_size > 0
    assert folders[0].name in (out / "README.md").read_text()
    return outcome


@pytest.mark.parametrize("number", range(TRIALS))
def test_a_random_kill_loses_nothing(
    number: int, reference: Reference, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    rng = random.Random(SEED * 1000 + number)
    kind = KINDS[number % len(KINDS)]
    if kind in ("workload", "recorder"):  # no finished runs to collect: tests/chaos/test_mutants.py runs this alone
        outcome = trial_record(rng, tmp_path, kind, reference)
    elif kind == "collect":
        outcome = trial_collect(rng, tmp_path, request.getfixturevalue("local_runs"))
    else:
        outcome = trial_report(rng, tmp_path, request.getfixturevalue("local_runs"))
    log = os.environ.get("ATLAS_CHAOS_LOG")  # `make chaos` sums these up: trials, kills landed, resumes
    if log:
        with open(log, "a") as fh:
            fh.write(json.dumps({"trial": number, "kind": kind, **outcome}) + "\n")


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
        assert sorted(p.name for p in (results / "local").iterdir() if p.name != INDEX_FILE) == sorted(ids)
        assert all(run.schema_problems == [] for run in find_runs(results))
