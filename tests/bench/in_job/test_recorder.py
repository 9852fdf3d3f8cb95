"""`bench record` as a real subprocess around a real (stand-in) workload process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.records.contract import samples_files
from bench.records.read import load_run

WORKLOAD = str(Path(__file__).with_name("contract_workload.py"))
REPO = Path(__file__).resolve().parents[3]


def record_cmd(run_dir: Path, *workload_args: str, interval: float = 0.1) -> list[str]:
    return [
        sys.executable,
        "-m",
        "bench",
        "record",
        "--run-dir",
        str(run_dir),
        "--env",
        "test-env",
        "--interval",
        str(interval),
        "--",
        sys.executable,
        WORKLOAD,
        str(run_dir),
        *workload_args,
    ]


def run_record(run_dir: Path, *workload_args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        record_cmd(run_dir, *workload_args), cwd=REPO, capture_output=True, text=True, timeout=timeout
    )


def wait_for(predicate, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def _config_hash(run_dir: Path) -> str | None:
    """run.json's config hash once the recorder has written it (the file appears at start)."""
    try:
        return json.loads((run_dir / "run.json").read_text()).get("config_sha256")
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def nvml_present() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
        return True
    except Exception:
        return False


def test_success_writes_complete_record(tmp_path: Path) -> None:
    run_dir = tmp_path / "r1"
    proc = run_record(run_dir, "--iters", "6", "--sleep", "0.1", "--burn")
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["schema_version"] == 1
    assert meta["run_id"] == "r1" and meta["env"] == "test-env"
    assert meta["exit"] == {"status": "success", "code": 0, "signal": None, "signals_forwarded": []}
    first = json.loads((run_dir / "train.jsonl").read_text().splitlines()[0])
    assert meta["config_sha256"] == first["config_sha256"] and meta["config"] == first["config"]
    assert meta["experiment"] == "contract"
    assert meta["end_time"] >= meta["start_time"] == meta["scheduler"]["start_time"]
    assert meta["hardware"]["cpu_cores_logical"] >= 1 and meta["hardware"]["memory_bytes"] > 0
    assert meta["software"]["python"] == ".".join(map(str, sys.version_info[:3]))
    assert meta["command"][:3] == [sys.executable, WORKLOAD, str(run_dir)]
    assert meta["git"]["sha"] and len(meta["git"]["sha"]) == 40
    assert meta["recorder"]["job_cpu_s"] > 0.05 and 0 < meta["recorder"]["cpu_s"]  # the job burned CPU
    files = samples_files(run_dir)
    assert [f.name for f in files] == [meta["samples_file"]]
    run = load_run(run_dir, collected=False)  # not yet placed: no environment facts
    df = next(iter(run.samples.values()))
    assert len(df) >= 3
    assert df["proc_rss_bytes"].max() > 1e6  # a Python process is bigger than 1 MB
    assert df["proc_cpu_percent"].max() > 0  # it burned CPU
    assert (df["host_mem_total_bytes"] > 0).all()
    assert run.problems == []


@pytest.mark.slow
@pytest.mark.skipif(nvml_present(), reason="this machine has NVML: the no-GPU path is tested where there is none")
def test_no_nvml_is_recorded_and_job_goes_on(tmp_path: Path) -> None:
    run_dir = tmp_path / "nogpu"
    env = dict(os.environ)
    env.pop("CUDA_VISIBLE_DEVICES", None)
    proc = subprocess.run(
        record_cmd(run_dir, "--iters", "2"), cwd=REPO, capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((run_dir / "run.json").read_text())
    messages = [e["message"] for e in meta["sampler_errors"]]
    assert any("NVMLError_LibraryNotFound" in m for m in messages), messages
    assert meta["hardware"]["gpus"] == []
    header = samples_files(run_dir)[0].read_text().splitlines()[0]
    assert "DCGM" not in header


@pytest.mark.slow
@pytest.mark.parametrize("code", [1, 2, 3])
def test_exit_code_passes_through(tmp_path: Path, code: int) -> None:
    run_dir = tmp_path / f"exit{code}"
    proc = run_record(run_dir, "--iters", "1", "--exit", str(code))
    assert proc.returncode == code
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["exit"]["code"] == code and meta["exit"]["status"] == "failed"


@pytest.mark.slow
def test_child_killed_by_signal_exits_128_plus_n(tmp_path: Path) -> None:
    run_dir = tmp_path / "killed"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "record",
            "--run-dir",
            str(run_dir),
            "--env",
            "e",
            "--",
            sys.executable,
            "-c",
            "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 128 + signal.SIGKILL
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["exit"] == {"status": "killed", "code": None, "signal": "SIGKILL", "signals_forwarded": []}


def test_missing_command_is_exit_127_and_recorded(tmp_path: Path) -> None:
    run_dir = tmp_path / "nocmd"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "record",
            "--run-dir",
            str(run_dir),
            "--env",
            "e",
            "--",
            str(tmp_path / "no-such-program"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 127
    assert "could not start" in proc.stderr
    assert json.loads((run_dir / "run.json").read_text())["exit"]["status"] == "failed"


def test_no_command_is_a_clear_error(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "record", "--run-dir", str(tmp_path / "x"), "--env", "e"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "nothing to record" in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGUSR1])
def test_signals_are_forwarded(tmp_path: Path, sig: signal.Signals) -> None:
    run_dir = tmp_path / sig.name
    ready = tmp_path / "ready"
    proc = subprocess.Popen(
        record_cmd(run_dir, "--iters", "2000", "--sleep", "0.05", "--ready", str(ready)),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(ready.exists)
        # run.json is written right after the child starts: wait for it so the handler is set
        wait_for(lambda: (run_dir / "run.json").exists())
        proc.send_signal(sig)
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 75, proc.stderr.read() if proc.stderr else ""
    assert (run_dir / "got-signal").read_text().split() == [sig.name]
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["exit"]["status"] == "preempted" and meta["exit"]["code"] == 75
    assert meta["exit"]["signals_forwarded"] == [sig.name]


def test_recorder_killed_hard_leaves_readable_record(tmp_path: Path) -> None:
    run_dir = tmp_path / "hard"
    ready = tmp_path / "ready"
    proc = subprocess.Popen(
        record_cmd(run_dir, "--iters", "2000", "--sleep", "0.05", "--ready", str(ready), interval=0.05), cwd=REPO
    )
    try:
        wait_for(ready.exists)
        wait_for(lambda: bool(samples_files(run_dir)) and samples_files(run_dir)[0].read_text().count("\n") >= 4)
        train_log = run_dir / "train.jsonl"  # may not exist yet when the samples do
        wait_for(lambda: train_log.exists() and train_log.read_text().count('"train"') >= 2)
        # the start write of run.json (after the schema check, which under load can come
        # after several samples and train lines): the record the kill must leave readable
        wait_for((run_dir / "run.json").exists)
        proc.kill()  # SIGKILL: no handler, no final write
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    # The workload is told (parent-death signal) and stops, logging a run_stop.
    wait_for(lambda: (run_dir / "got-signal").exists(), timeout=15)
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["exit"]["status"] == "running" and meta["end_time"] is None
    run = load_run(run_dir, collected=False)
    assert any("still says 'running'" in p for p in run.problems)
    assert run.samples and len(next(iter(run.samples.values()))) >= 3
    assert run.train.of("run_start") and run.train.of("train")


@pytest.mark.slow
def test_resumed_run_keeps_history_and_appends_samples(tmp_path: Path) -> None:
    run_dir = tmp_path / "resume"
    assert run_record(run_dir, "--iters", "2").returncode == 0
    first = json.loads((run_dir / "run.json").read_text())
    rows_before = samples_files(run_dir)[0].read_text().count("\n")
    assert run_record(run_dir, "--iters", "2").returncode == 0
    second = json.loads((run_dir / "run.json").read_text())
    assert second["previous_attempts"][0]["start_time"] == first["start_time"]
    assert second["start_time"] > first["start_time"]
    assert samples_files(run_dir)[0].read_text().count("\n") > rows_before
    assert len(load_run(run_dir).train.of("run_start")) == 2


@pytest.mark.slow
def test_only_the_first_node_of_a_multi_node_job_writes_run_json(tmp_path: Path) -> None:
    """Every node's recorder shares the run dir: node 1 adds samples, node 0 owns run.json.
    The batch script tells the recorder its scheduler (--scheduler slurm, or ATLAS_SCHEDULER=slurm), whose probe
    reads the node's rank (bench/in_job/scheduler/slurm.py)."""
    run_dir = tmp_path / "multinode"
    env = dict(os.environ, ATLAS_SCHEDULER="slurm", SLURM_NODEID="1")
    proc = subprocess.run(
        record_cmd(run_dir, "--iters", "2"), cwd=REPO, capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert not (run_dir / "run.json").exists()
    assert samples_files(run_dir), "node 1 must still write its samples"
    proc = subprocess.run(
        record_cmd(run_dir, "--iters", "2"),
        cwd=REPO,
        capture_output=True,
        text=True,
        env=dict(os.environ, ATLAS_SCHEDULER="slurm", SLURM_NODEID="0"),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads((run_dir / "run.json").read_text())["exit"]["status"] == "success"


@pytest.mark.slow
def test_a_signal_after_the_job_ended_does_not_cost_the_record(tmp_path: Path) -> None:
    """Slurm's time-limit warning can land after the job finished, while the recorder
    completes run.json: the finished job must stay a success with its final record."""
    import psutil

    run_dir, release = tmp_path / "late", tmp_path / "release"
    proc = subprocess.Popen(
        record_cmd(run_dir, "--iters", "3", "--hold", str(release)),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        recorder = psutil.Process(proc.pid)
        log = run_dir / "train.jsonl"
        wait_for(lambda: log.is_file() and '"run_stop"' in log.read_text())  # the job's last line, held
        # Held still (SIGSTOP) from here, the recorder cannot finish before the signal lands,
        # however fast its finishing is or busy the machine; then the job may end
        recorder.suspend()
        children = recorder.children()  # the job (and at most a finished git probe)
        release.touch()
        wait_for(lambda: all(c.status() == psutil.STATUS_ZOMBIE for c in children))  # the job has ended
        proc.send_signal(signal.SIGUSR1)  # pending until the recorder runs again, finishing
        recorder.resume()
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 0, proc.stderr.read() if proc.stderr else ""
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["exit"]["status"] == "success" and meta["end_time"] is not None
    assert meta["exit"]["signals_forwarded"] == ["SIGUSR1"], "the signal must have reached a live recorder"


@pytest.mark.slow
def test_a_scancel_mark_written_after_the_job_ended_still_makes_it_a_cancel(tmp_path: Path) -> None:
    """A plain scancel TERMs the whole job; the batch script marks it CANCELLED only after
    asking scontrol, and the workload may have checkpointed and ended first. Under Slurm the
    recorder waits for that mark (the probe's cancel_mark_wait_s) before calling the run
    preempted (it was called preempted, and resubmitted, once in a full test run)."""
    import psutil

    run_dir = tmp_path / "cancelled"
    proc = subprocess.Popen(
        record_cmd(run_dir, "--iters", "100000"),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, ATLAS_SCHEDULER="slurm", SLURM_JOB_ID="7", SLURM_NODEID="0"),
    )
    try:
        recorder = psutil.Process(proc.pid)
        log = run_dir / "train.jsonl"
        wait_for(lambda: log.is_file() and '"train"' in log.read_text())
        proc.send_signal(signal.SIGTERM)  # scancel's TERM, forwarded to the job
        wait_for(lambda: '"preempted"' in log.read_text())  # the job checkpointed and says so
        recorder.suspend()  # the job ends while the recorder is held: its wait starts on resume
        children = recorder.children()
        wait_for(lambda: all(c.status() == psutil.STATUS_ZOMBIE for c in children))
        recorder.resume()
        time.sleep(1.0)  # scontrol answering the batch script, well inside the 5 s wait
        (run_dir / "CANCELLED").write_text("scancel: TERM without the time-limit warning\n")
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert json.loads((run_dir / "run.json").read_text())["exit"]["status"] == "cancelled"


def test_config_is_in_run_json_while_the_job_runs(tmp_path: Path) -> None:
    """A recorder killed hard (or a final write that fails) still leaves what was trained:
    the config and its hash are written as soon as the workload's run_start appears."""
    run_dir = tmp_path / "early"
    ready = tmp_path / "ready"
    proc = subprocess.Popen(
        record_cmd(run_dir, "--iters", "2000", "--sleep", "0.05", "--ready", str(ready), interval=0.05), cwd=REPO
    )
    try:
        wait_for(ready.exists)
        wait_for(lambda: _config_hash(run_dir) is not None, timeout=60)
        proc.kill()
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["exit"]["status"] == "running"
    assert meta["config"] == {"experiment": "contract", "iters": 2000} and len(meta["config_sha256"]) == 64
    assert meta["command"][-1] == str(ready)


@pytest.mark.slow
def test_a_final_write_into_a_full_disk_is_one_line_and_keeps_the_start_facts(small_tmpfs: Path) -> None:
    """Real ENOSPC: the job fills the tmpfs after training; the recorder cannot write the
    final run.json, says so in one line (exit 74: disk full), and the record on disk is
    the start record, with config, hash and command, never half a file."""
    from bench.records.contract import EXIT_DISK_FULL

    run_dir = small_tmpfs / "run"
    job = (
        f"{sys.executable} {WORKLOAD} {run_dir} --iters 3 --sleep 0.3 && "
        f"(dd if=/dev/zero of={small_tmpfs}/ballast bs=65536 2>/dev/null; true)"
    )
    cmd = [sys.executable, "-m", "bench", "record", "--run-dir", str(run_dir), "--env", "test-env"]
    proc = subprocess.run(
        [*cmd, "--interval", "0.1", "--", "sh", "-c", job], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == EXIT_DISK_FULL, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("bench record: error:")]
    assert len(lines) == 1 and "final run.json could not be written" in lines[0] and "success" in lines[0]
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["exit"]["status"] == "running" and meta["config_sha256"] and meta["config"]["iters"] == 3
    assert not [p for p in run_dir.iterdir() if p.name.startswith(".run.json")]  # no temporary left
