"""bench/in_job/command.py: the one job command every launcher runs."""

from __future__ import annotations

import json
import subprocess
import sys

from bench.in_job.command import job_command, main
from bench.targets.base import JobSpec
from bench.targets.launch import recorded_launch


def test_the_command_wraps_the_workload_in_bench_record():
    cmd = job_command("satori", "cifar", "/r/1", ("train.max_iters=2",), python="py")
    assert cmd == [
        "py", "-m", "bench", "record", "--run-dir", "/r/1", "--env", "satori", "--",
        "py", "-m", "workflows.biggan", "--experiment", "cifar", "--run-dir", "/r/1", "--set", "train.max_iters=2",
    ]  # fmt: skip
    job = JobSpec(run_id="1", experiment="cifar", commit="c", overrides=("train.max_iters=2",))
    assert recorded_launch("satori", job, "/r/1", python="py") == cmd  # the local target's command


def test_entry_point_reads_the_job_from_the_environment(monkeypatch, capsys):
    monkeypatch.setenv("ATLAS_ENV", "moc")
    monkeypatch.setenv("ATLAS_EXPERIMENT", "smoke")
    monkeypatch.setenv("ATLAS_RUN_DIR", "/results/r1")
    launcher = "-m torch.distributed.run --standalone --nproc-per-node=4"
    assert main(["--print", "--launcher", launcher, "--", "--set", "a=1"]) == 0
    cmd = json.loads(capsys.readouterr().out)
    assert cmd == job_command("moc", "smoke", "/results/r1", (), sys.executable, launcher.split(), ["--set", "a=1"])
    assert cmd[cmd.index("--") + 1 :][:5] == [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node=4",
    ]


def test_missing_variables_are_one_clear_line():
    env = {"PATH": "/usr/bin:/bin"}
    p = subprocess.run(
        [sys.executable, "-m", "bench.in_job.command", "--print"], env=env, capture_output=True, text=True
    )
    assert p.returncode == 2 and p.stderr.strip().count("\n") == 0
    assert "set ATLAS_ENV, ATLAS_EXPERIMENT, ATLAS_RUN_DIR" in p.stderr
