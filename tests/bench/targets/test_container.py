"""The training image and the `container` target, for real with podman where it runs.

The podman tests build a Debian+Python base image with debootstrap (cached as
localhost/atlas-base-python:bookworm), build the Dockerfile on it (layer cache keeps
rebuilds to seconds), run it as an OpenShift-style arbitrary UID with group 0, and run
the smoke experiment through the container target, checking the run record.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from bench.environments.load import CLUSTERS_DIR, REPO_ROOT, Environment
from bench.errors import AtlasError, ConfigError
from bench.targets import target_class
from bench.targets.base import JobSpec, RunState, new_run_id
from bench.targets.container import cpu_quantity, memory_quantity, podman_time
from bench.targets.lifecycle import collect_run

ENV_DIR = CLUSTERS_DIR / "local-podman"
TEST_IMAGE = "localhost/atlas-biggan:test"
BASE_IMAGE = "localhost/atlas-base-python:bookworm"
UID = "1000680000"


def make_target(tmp_path: Path, **settings):
    data = yaml.safe_load((ENV_DIR / "env.yaml").read_text())
    data.update(runs_dir=str(tmp_path / "runs"), **settings)
    return target_class("container")(Environment("local-podman", "container", ENV_DIR, data))


# -- no podman needed -----------------------------------------------------------------
def test_quantities_and_podman_times():
    assert cpu_quantity("2") == 2 and cpu_quantity("500m") == 0.5 and cpu_quantity(1.5) == 1.5
    assert memory_quantity("6Gi") == 6 * 2**30 and memory_quantity("512Mi") == 512 * 2**20
    assert memory_quantity("1G") == 10**9
    with pytest.raises(ValueError, match="not a memory quantity"):
        memory_quantity("6 GB")
    assert podman_time("2026-11-22T02:16:01.123456789Z") == pytest.approx(1795313761.123456)
    assert podman_time("2026-11-22T02:16:01.5+00:00") == pytest.approx(1795313761.5)
    assert podman_time("0001-01-01T00:00:00Z") is None


def test_bad_settings_are_named(tmp_path):
    with pytest.raises(
        ConfigError,
        match=r"limits.memory: not a memory quantity.*'user' must be numeric|"
        r"'user' must be numeric.*limits.memory",
    ):
        make_target(tmp_path, user="atlas", limits={"cpu": "2", "memory": "6 GB"})
    with pytest.raises(ConfigError, match="unknown key.*gpus"):
        make_target(tmp_path, gpus=1)


def test_run_command_has_the_jobs_limits_and_openshift_uid(tmp_path):
    target = make_target(tmp_path)
    job = JobSpec("r1", "smoke", "abc123", ("train.max_iters=4",))
    cmd = target.run_command(job, tmp_path / "r1", "sha256:feed", "abc123")
    flags = dict(zip(cmd, cmd[1:]))
    assert flags["--user"] == "1000680000:0" and flags["--cpus"] == "2.0"
    assert flags["--memory"] == flags["--memory-swap"] == f"{6 * 2**30}b"
    assert flags["--volume"] == f"{tmp_path / 'r1'}:/results/r1"
    envs = dict(v.split("=", 1) for k, v in zip(cmd, cmd[1:]) if k == "--env")
    assert envs["ATLAS_IMAGE_DIGEST"] == "sha256:feed" and envs["ATLAS_IMAGE_REF"] == "localhost/atlas-biggan:dev"
    assert envs["ATLAS_RUN_DIR"] == "/results/r1" and envs["ATLAS_ENV"] == "local-podman"
    assert cmd[-3:] == ["localhost/atlas-biggan:dev", "--set", "train.max_iters=4"]


def test_runs_go_one_after_another_on_this_host(tmp_path):
    assert make_target(tmp_path).runs_share_host is True


def test_unavailable_without_podman_says_how_to_fix(tmp_path):
    target = make_target(tmp_path, podman=str(tmp_path / "no-podman"))
    assert "podman is not installed" in target.available() and "podman-setup.sh" in target.available()
    with pytest.raises(AtlasError, match="podman is not installed"):
        target.submit(JobSpec("r1", "smoke", "abc"))


def test_dockerfile_is_openshift_ready():
    text = (REPO_ROOT / "Dockerfile").read_text()
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    user = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert user and user[-1].isdigit() and user[-1] != "0"
    assert lines[0].startswith("ARG BASE_IMAGE=") and "FROM ${BASE_IMAGE}" in lines
    for var in ("HOME=", "USER=", "TORCH_HOME=", "XDG_CACHE_HOME=", "MPLCONFIGDIR="):
        assert var in text
    assert not [line for line in lines if "git clone" in line] and "chgrp -R 0" in text and "chmod -R g=u" in text
    assert '"bench.in_job.command"' in [line for line in lines if line.startswith("ENTRYPOINT")][0]
    ignored = (REPO_ROOT / ".dockerignore").read_text().split()
    assert {".git", ".venv", "tests"} <= set(ignored)


# -- podman ----------------------------------------------------------------------------
def _podman_ok() -> str | None:
    if shutil.which("podman") is None:
        return "podman is not installed (sudo scripts/podman-setup.sh)"
    info = subprocess.run(["podman", "info"], capture_output=True, text=True, timeout=120)
    if info.returncode != 0:
        return f"podman cannot run here: {info.stderr.strip()[-200:]}"
    exists = subprocess.run(["podman", "image", "exists", BASE_IMAGE]).returncode == 0
    if not exists and (os.geteuid() != 0 or shutil.which("debootstrap") is None):
        return f"no {BASE_IMAGE} and cannot debootstrap one (needs root and debootstrap)"
    return None


@pytest.fixture(scope="module")
def image():
    reason = _podman_ok()
    if reason:
        pytest.skip(reason)
    subprocess.run(
        [str(REPO_ROOT / "scripts" / "podman-base-image.sh"), BASE_IMAGE], check=True, capture_output=True, timeout=900
    )
    build = subprocess.run(
        [str(REPO_ROOT / "scripts" / "podman-image.sh"), TEST_IMAGE],
        capture_output=True,
        text=True,
        timeout=1800,
        env=dict(os.environ, BASE_IMAGE=BASE_IMAGE),
    )
    assert build.returncode == 0, build.stdout[-2000:] + build.stderr[-2000:]
    yield TEST_IMAGE
    # Containers the tests started and did not collect (collect removes them).
    names = subprocess.run(
        ["podman", "ps", "-a", "--filter", f"ancestor={TEST_IMAGE}", "--format", "{{.Names}}"],
        capture_output=True,
        text=True,
    ).stdout.split()
    for name in names:
        if name.startswith("atlas-local-podman-"):
            subprocess.run(["podman", "rm", "--force", name], capture_output=True)


@pytest.mark.podman
@pytest.mark.slow
def test_image_works_under_an_arbitrary_uid_with_group_0(image, tmp_path):
    probe = (
        'id -u; id -g; touch "$HOME/w" "$TORCH_HOME/w" "$MPLCONFIGDIR/w" /results/w /opt/atlas/bench/w && '
        'python -c "import getpass, torch, workflows.biggan, bench; print(getpass.getuser(), torch.__version__)"'
    )
    out = subprocess.run(
        ["podman", "run", "--rm", "--user", f"{UID}:0", "--entrypoint", "sh", image, "-c", probe],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    uid, gid, who = out.stdout.split("\n")[:3]
    assert (uid, gid) == (UID, "0") and who.startswith("atlas 2.")


@pytest.mark.podman
@pytest.mark.slow
def test_smoke_run_through_the_container_target(image, tmp_path):
    target = make_target(tmp_path, image=image)
    assert target.available() is None
    job = JobSpec(
        new_run_id("0" * 40),
        "smoke",
        "0" * 40,
        ("train.max_iters=4", "train.log_every=2", "train.checkpoint_every=2", "train.ema_start=2"),
    )
    status = status_at_submit = target.submit(job)
    assert status.state is RunState.PENDING
    deadline = time.time() + 480
    while not (status := target.status(job.run_id)).state.finished:
        assert time.time() < deadline, f"still {status.state} after 8 minutes: {status.detail}"
        time.sleep(2)
    assert status.state is RunState.COMPLETED, status.detail

    dest = collect_run(target, job.run_id, tmp_path / "results").path
    record = json.loads((dest / "run.json").read_text())
    assert record["exit"]["status"] == "success" and record["exit"]["code"] == 0
    assert record["image"]["ref"] == image and record["image"]["digest"].startswith("sha256:")
    # run.json records the code inside the image (its label), not what bench was asked for.
    label = subprocess.run(
        ["podman", "image", "inspect", "--format", '{{index .Labels "atlas.commit"}}', image],
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert record["git"]["sha"] == label and label
    assert "rebuild it with `make image`" in status_at_submit.detail
    cgroup = record["hardware"]["cgroup"]
    assert cgroup["memory_limit_bytes"] == 6 * 2**30 and cgroup["cpu_limit_cores"] == 2.0
    sched = record["scheduler"]
    assert sched["kind"] == "container" and sched["queue_wait_s"] >= 0 and sched["end_time"] >= sched["start_time"]
    events = [json.loads(line)["event"] for line in (dest / "train.jsonl").read_text().splitlines()]
    assert events[0] == "run_start" and events[-1] == "run_stop" and "checkpoint" in events
    assert list(dest.glob("samples-*.csv")) and (dest / "job.log").read_text()
    # Files the arbitrary UID wrote on the host mount.
    assert (target.runs_dir / job.run_id / "run.json").stat().st_uid == int(UID)
    # The container is removed after collection; the record still answers.
    assert subprocess.run(["podman", "container", "exists", target.container_name(job.run_id)]).returncode != 0
    assert target.status(job.run_id).state is RunState.COMPLETED
    assert collect_run(target, job.run_id, dest.parent.parent).path == dest


def _wait(target, run_id: str, until, seconds: float = 300):
    deadline = time.time() + seconds
    while not until(status := target.status(run_id)):
        assert time.time() < deadline, f"gave up waiting: {status}"
        time.sleep(1)
    return status


@pytest.mark.podman
@pytest.mark.slow
def test_cancel_checkpoints_and_bad_config_fails(image, tmp_path):
    """SIGTERM reaches the recorder as PID 1 of the container: checkpoint, exit 75; the
    record says cancelled (bench cancel marks the run first), not preempted."""
    target = make_target(tmp_path, image=image)
    job = JobSpec(
        new_run_id("1" * 40),
        "smoke",
        "1" * 40,
        ("train.max_iters=100000", "train.log_every=2", "train.checkpoint_every=1000"),
    )
    target.submit(job)
    log = target.runs_dir / job.run_id / "train.jsonl"
    _wait(target, job.run_id, lambda s: log.exists() and '"train"' in log.read_text())
    target.cancel(job.run_id)
    status = target.status(job.run_id)
    assert status.state is RunState.CANCELLED and "exit code 75" in status.detail
    dest = collect_run(target, job.run_id, tmp_path / "results").path
    record = json.loads((dest / "run.json").read_text())
    assert record["exit"]["status"] == "cancelled" and record["exit"]["signals_forwarded"] == ["SIGTERM"]
    events = [json.loads(line)["event"] for line in (dest / "train.jsonl").read_text().splitlines()]
    assert events[-2:] == ["checkpoint", "run_stop"]

    bad = JobSpec(new_run_id("2" * 40), "smoke", "2" * 40, ("train.no_such_key=1",))
    target.submit(bad)
    status = _wait(target, bad.run_id, lambda s: s.state.finished)
    assert status.state is RunState.FAILED and "exit code 2: bad configuration" in status.detail
