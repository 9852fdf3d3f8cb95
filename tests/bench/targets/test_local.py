"""The local target with the real workload (smoke experiment: seconds on 2 cores)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from bench.analysis.run_index import INDEX_FILE
from bench.environments.load import load_env
from bench.errors import AtlasError, ConfigError
from bench.records.timeline import timeline_problems
from bench.targets import JobSpec, RunState, target_for
from bench.targets.base import new_run_id
from bench.targets.lifecycle import collect_run
from bench.targets.local import LocalTarget

pytestmark = pytest.mark.slow


def make_env(tmp_path: Path, extra: str = "") -> Path:
    clusters = tmp_path / "clusters"
    (clusters / "loc").mkdir(parents=True)
    (clusters / "loc" / "env.yaml").write_text(
        f"kind: local\nlocal: true\nruns_dir: {tmp_path / 'runs'}\ninterval_s: 0.5\n{extra}"
    )
    return clusters


def wait_finished(target: LocalTarget, run_id: str, timeout: float = 240) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if target.status(run_id).state.finished:
            return
        time.sleep(0.3)
    raise AssertionError(f"{run_id} did not finish in {timeout} s: {target.status(run_id)}")


def test_submit_status_collect_is_idempotent(tmp_path: Path) -> None:
    target = target_for(load_env("loc", make_env(tmp_path)))
    assert target.available() is None
    job = JobSpec(new_run_id("abc"), "smoke", "abc")
    first = target.submit(job)
    assert first.state in (RunState.PENDING, RunState.RUNNING) and first.scheduler_job_id
    with pytest.raises(AtlasError, match="collect it once it has finished"):
        collect_run(target, job.run_id, tmp_path / "results")
    wait_finished(target, job.run_id)
    st = target.status(job.run_id)
    assert st.state == RunState.COMPLETED, st.detail
    assert [r.run_id for r in target.list_runs("abc")] == [job.run_id]
    assert target.list_runs("zzz") == []
    collected = collect_run(target, job.run_id, tmp_path / "results")
    dest = collected.path
    meta = json.loads((dest / "run.json").read_text())
    # the record as placed, read once there: what `bench run` indexes and reads the exit from
    assert collected.run is not None and collected.run.path == dest and collected.run.meta == meta
    assert meta["env"] == "loc" and meta["experiment"] == "smoke" and meta["exit"]["code"] == 0
    assert meta["scheduler"]["submit_time"] <= meta["scheduler"]["start_time"]
    assert meta["scheduler"]["queue_wait_s"] >= 0 and meta["sample_interval_s"] == 0.5
    assert len(meta["config_sha256"]) == 64
    assert_timeline_adds_up(meta["timeline"])
    before = {p.name: p.stat().st_mtime_ns for p in dest.iterdir()}
    again = collect_run(target, job.run_id, tmp_path / "results")  # again: nothing changes, nothing read
    assert again.path == dest and again.run is None
    assert {p.name: p.stat().st_mtime_ns for p in dest.iterdir()} == before
    files = ["job.log", "profile.json", "run.json", "samples-" + meta["hosts"][0] + ".csv", "train.jsonl"]
    assert sorted(before) == files  # profile.json: the smoke run is too short for the window, and says so


def assert_timeline_adds_up(timeline: dict) -> None:
    """A real local run's timeline: every phase a bare process has is known, from the bench
    host's and the job's clocks; queue, stage and pull are null with the reason; the known
    phases add up to submitted -> collected within one clock resolution."""
    by = {p["phase"]: p for p in timeline["phases"]}
    assert list(by) == ["deliver", "queue", "stage", "pull", "launch", "warmup", "train", "finish", "collect"]
    for phase in ("deliver", "launch", "warmup", "train", "finish", "collect"):
        # not below zero by more than the clocks' resolution (a process start is read in 10 ms ticks)
        assert by[phase]["seconds"] is not None and by[phase]["seconds"] >= -by[phase]["resolution_s"], by[phase]
    assert by["deliver"]["source"] == "bench-host" and by["launch"]["source"] == "bench-host → job"
    assert by["train"]["source"] == "job" and by["collect"]["source"] == "job → bench-host"
    assert by["queue"]["seconds"] is None and by["queue"]["reason"].startswith("no scheduler")
    assert by["stage"]["reason"] and by["pull"]["reason"] == "no image: a bare process"
    marks = timeline["marks"]
    whole = marks["collected"]["time"] - marks["submitted"]["time"]
    total = sum(p["seconds"] for p in timeline["phases"] if p["seconds"] is not None)
    resolution = max(p.get("resolution_s", 0.0) for p in timeline["phases"])
    assert abs(total - whole) <= resolution, (total, whole)
    assert marks["submitted"]["time"] < marks["accepted"]["time"] <= marks["recorder_start"]["time"]
    assert marks["workload_start"]["time"] < marks["first_iter"]["time"] < marks["last_iter"]["time"]
    assert timeline_problems(timeline) == []


def test_cancel_preempts_the_job(tmp_path: Path) -> None:
    target = target_for(load_env("loc", make_env(tmp_path)))
    job = JobSpec(new_run_id("abc"), "smoke", "abc", overrides=("train.max_iters=100000",))
    target.submit(job)
    run_dir = target.runs_dir / job.run_id
    end = time.monotonic() + 180
    while time.monotonic() < end and '"train"' not in (
        (run_dir / "train.jsonl").read_text() if (run_dir / "train.jsonl").exists() else ""
    ):
        time.sleep(0.3)
    target.cancel(job.run_id)
    wait_finished(target, job.run_id)
    st = target.status(job.run_id)
    assert st.state == RunState.CANCELLED
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["exit"]["code"] == 75 and meta["exit"]["signals_forwarded"] == ["SIGTERM"]
    assert meta["exit"]["status"] == "cancelled"  # not "preempted": nothing is to resume it


def test_cli_cancel_stops_a_running_run_and_leaves_finished_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.cli import main

    monkeypatch.setenv("ATLAS_RUNS_DIR", str(tmp_path / "runs"))
    target = target_for("local")
    job = JobSpec(new_run_id("abc"), "smoke", "abc", overrides=("train.max_iters=100000",))
    target.submit(job)
    run_dir = target.runs_dir / job.run_id
    end = time.monotonic() + 180
    while time.monotonic() < end and '"run_start"' not in (
        (run_dir / "train.jsonl").read_text() if (run_dir / "train.jsonl").exists() else ""
    ):
        time.sleep(0.3)
    assert main(["cancel", "--env", "local"]) == 2  # which runs? never all by default
    assert main(["cancel", "--env", "local", "--run", job.run_id]) == 0
    assert f"cancelled: local/{job.run_id}" in capsys.readouterr().out
    wait_finished(target, job.run_id)
    assert target.status(job.run_id).state == RunState.CANCELLED
    assert json.loads((run_dir / "run.json").read_text())["exit"]["status"] == "cancelled"
    assert main(["cancel", "--env", "local", "--all"]) == 0
    assert f"already finished: local/{job.run_id}" in capsys.readouterr().out


def test_bad_settings_name_the_key(tmp_path: Path) -> None:
    clusters = tmp_path / "clusters"
    (clusters / "bad").mkdir(parents=True)
    (clusters / "bad" / "env.yaml").write_text("kind: local\ninterval_s: fast\n")
    with pytest.raises(ConfigError, match="env.yaml: interval_s must be a number"):
        target_for(load_env("bad", clusters))
    (clusters / "bad" / "env.yaml").write_text("kind: local\nnamespace: x\n")
    with pytest.raises(ConfigError, match="unknown key\\(s\\) namespace"):
        target_for(load_env("bad", clusters))


def test_unknown_run_is_a_clear_error(tmp_path: Path) -> None:
    target = target_for(load_env("loc", make_env(tmp_path)))
    with pytest.raises(AtlasError, match="no run 'nope'"):
        target.status("nope")


def test_cli_run_status_collect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.cli import main
    from bench.environments import load as env_load
    from workflows.biggan import config

    monkeypatch.setenv("ATLAS_RUNS_DIR", str(tmp_path / "runs"))
    results = tmp_path / "results"
    # `bench run` in one pass: env.yaml read once, the experiment resolved once (issue 32)
    reads, resolved = [], []
    read, resolve = env_load.read_bounded, config.resolve
    monkeypatch.setattr(env_load, "read_bounded", lambda path, *a: reads.append(path) or read(path, *a))
    monkeypatch.setattr(config, "resolve", lambda *a: resolved.append(a) or resolve(*a))
    assert (
        main(
            [
                "run",
                "--env",
                "local",
                "--experiment",
                "smoke",
                "--runs",
                "1",
                "--results",
                str(results),
                "--set",
                "train.max_iters=10",
            ]
        )
        == 0
    )
    assert reads == [env_load.CLUSTERS_DIR / "local" / "env.yaml"], reads
    assert resolved == [("smoke", ["train.max_iters=10"])], resolved
    out = capsys.readouterr().out
    assert "submitted local/" in out and "completed (success, exit code 0)" in out
    run_id = next(p for p in (results / "local").iterdir() if p.name != INDEX_FILE).name
    assert f"collected: {results / 'local' / run_id}" in out
    assert main(["status", "--env", "local"]) == 0
    status = capsys.readouterr().out
    assert run_id in status and "completed" in status
    assert main(["collect", "--env", "local", "--results", str(results)]) == 0
    assert f"already collected: {results / 'local' / run_id}" in capsys.readouterr().out
    # an unknown experiment is refused before anything is submitted (issue 11)
    assert main(["run", "--env", "local", "--experiment", "no-such", "--results", str(results)]) == 2
    assert "no-such" in capsys.readouterr().err and [
        p.name for p in (results / "local").iterdir() if p.name != INDEX_FILE
    ] == [run_id]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--experiment", "nosuch"], "nosuch"),
        (["--experiment", "smoke", "--set", "train.batch_size=-1"], "train.batch_size"),
        (["--experiment", "smoke", "--set", "train.no_such_key=1"], "no_such_key"),
    ],
)
def test_bad_workload_input_is_refused_before_submitting(
    args: list[str], needle: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.cli import main

    monkeypatch.setenv("ATLAS_RUNS_DIR", str(tmp_path / "runs"))
    code = main(["run", "--env", "local", "--results", str(tmp_path / "results"), *args])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    [line] = captured.err.strip().splitlines()
    assert line.startswith("bench run: error:") and needle in line and "nothing submitted" in line
    assert not (tmp_path / "runs").exists() and not (tmp_path / "results").exists()
    assert main(["run", "--env", "local", "--no-wait", *args]) == 2  # the push-to-deploy path too
    assert not (tmp_path / "runs").exists()


def test_a_failed_run_prints_the_workloads_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.cli import main

    monkeypatch.setenv("ATLAS_RUNS_DIR", str(tmp_path / "runs"))
    missing = tmp_path / "no-such-images"
    code = main(
        [
            "run",
            "--env",
            "local",
            "--experiment",
            "smoke",
            "--results",
            str(tmp_path / "results"),
            "--set",
            "data.source=imagefolder",
            "--set",
            f"data.path={missing}",
        ]
    )
    out = capsys.readouterr().out
    assert code == 1
    assert f"the workload said: biggan: error: data.path '{missing}' is not a directory" in out, out
