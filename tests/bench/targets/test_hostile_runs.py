"""A job that plants links, devices and FIFOs in its run folder changes nothing outside its run.

The local target runs here for real (a finished run folder is laid out as a job would
leave it, then collected); the container target's podman is a stand-in script
(`podman_double`) because no container runs in this test; the OpenShift copy goes through
the loopback API double whose exec runs the real `tar`.
"""

from __future__ import annotations

import json
import os
import stat
import tarfile
import time
from pathlib import Path

import pytest
import yaml

from bench.environments.load import CLUSTERS_DIR, Environment
from bench.errors import AtlasError
from bench.records import jobfiles
from bench.records.contract import CANCEL_MARK
from bench.targets import target_class
from bench.targets.lifecycle import collect_run

RUN_ID = "20261122t030000-01234567-abcd"
OTHER = "20261122t020000-01234567-ffff"
SECRET = "the collecting user's secret\n"


def finished_record(run_id: str) -> dict:
    return {
        "schema_version": 1,
        "run_id": run_id,
        "env": "loc",
        "experiment": "smoke",
        "exit": {"status": "success", "code": 0},
        "start_time": 1.0,
        "end_time": 2.0,
    }


def plant(run_dir: Path, tmp_path: Path) -> dict[str, Path]:
    """A hostile run folder: links to a file outside, to another run, to /dev/zero; a FIFO."""
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text(json.dumps(finished_record(run_dir.name)))
    secret = tmp_path / "authorized_keys"
    secret.write_text(SECRET)
    other = run_dir.parent / OTHER
    other.mkdir()
    (other / "run.json").write_text(json.dumps(finished_record(OTHER)))
    (run_dir / "job.log").symlink_to(secret)
    (run_dir / "train.jsonl").symlink_to(other / "run.json")
    (run_dir / "samples-zero.csv").symlink_to("/dev/zero")
    os.mkfifo(run_dir / "samples-fifo.csv")
    return {"secret": secret, "other": other / "run.json"}


def check_outcome(dest: Path, planted: dict[str, Path], out: str, before: dict[str, bytes]) -> None:
    assert json.loads((dest / "run.json").read_text())["run_id"] == RUN_ID
    for path in dest.rglob("*"):
        assert stat.S_ISREG(os.lstat(path).st_mode) or path.is_dir(), f"{path} is not a regular file"
    assert not any(SECRET in p.read_text(errors="replace") for p in dest.rglob("*") if p.is_file())
    for name in ("train.jsonl", "samples-zero.csv", "samples-fifo.csv"):
        assert not (dest / name).exists()
        assert f"{name}: " in out and "not copied" in out or "removed" in out
    assert "a symbolic link" in out and "a FIFO" in out
    assert {k: p.read_bytes() for k, p in planted.items()} == before


def test_local_collect_refuses_planted_links_and_names_them(tmp_path: Path, capsys) -> None:
    runs = tmp_path / "runs"
    data = {"kind": "local", "local": True, "runs_dir": str(runs)}
    target = target_class("local")(Environment("loc", "local", tmp_path / "clusters" / "loc", data))
    run_dir = runs / "loc" / RUN_ID
    planted = plant(run_dir, tmp_path)
    (run_dir / "submit.json").write_text(json.dumps({"pid": None, "commit": "0123456"}))
    before = {k: p.read_bytes() for k, p in planted.items()}
    dest = collect_run(target, RUN_ID, tmp_path / "results").path
    out = capsys.readouterr().out
    check_outcome(dest, planted, out, before)
    assert "job.log: a symbolic link" in out and not (dest / "job.log").exists()
    # cancel writes its marker without following a planted link, and says so in one line
    # (a run still running: a finished one is left alone, not marked)
    (run_dir / "run.json").write_text(json.dumps({**finished_record(RUN_ID), "exit": {"status": "running"}}))
    (run_dir / CANCEL_MARK).symlink_to(planted["secret"])
    with pytest.raises(AtlasError, match="is a link"):
        target.cancel(RUN_ID)
    assert planted["secret"].read_text() == SECRET


@pytest.mark.parametrize("pid", ["1234", 10**30, -1, 0, 1, True, 3.5])
def test_local_status_and_cancel_survive_a_bad_pid(tmp_path: Path, pid) -> None:
    runs = tmp_path / "runs"
    data = {"kind": "local", "local": True, "runs_dir": str(runs)}
    target = target_class("local")(Environment("loc", "local", tmp_path / "clusters" / "loc", data))
    run_dir = runs / "loc" / RUN_ID
    run_dir.mkdir(parents=True)
    (run_dir / "submit.json").write_text(json.dumps({"pid": pid}))
    st = target.status(RUN_ID)
    assert st.state.finished and "submit.json pid" in st.detail and "is not a process id" in st.detail
    target.cancel(RUN_ID)  # signals nothing: a pid <= 1 would reach init, our group, or every process of ours


PODMAN_DOUBLE = """#!/bin/sh
# podman_double: answers what ContainerTarget.fetch asks of podman for a container that exited 0.
case "$1 $2" in
  "container inspect") echo '[{"State": {"Status": "exited", "ExitCode": 0,
     "StartedAt": "2026-11-22T02:16:01Z", "FinishedAt": "2026-11-22T02:17:01Z"}}]' ;;
  "logs "*) echo "the container's log" ;;
  "rm "*) : ;;
  *) echo "podman_double: unsupported $*" >&2; exit 125 ;;
esac
"""


def test_container_collect_writes_its_log_outside_the_run_folder(tmp_path: Path, capsys) -> None:
    podman = tmp_path / "podman_double"
    podman.write_text(PODMAN_DOUBLE)
    podman.chmod(0o755)
    data = yaml.safe_load((CLUSTERS_DIR / "local-podman" / "env.yaml").read_text())
    data.update(runs_dir=str(tmp_path / "runs"), podman=str(podman))
    target = target_class("container")(Environment("local-podman", "container", CLUSTERS_DIR / "local-podman", data))
    planted = plant(tmp_path / "runs" / "local-podman" / RUN_ID, tmp_path)
    before = {k: p.read_bytes() for k, p in planted.items()}
    dest = collect_run(target, RUN_ID, tmp_path / "results").path
    out = capsys.readouterr().out
    check_outcome(dest, planted, out, before)  # job.log -> authorized_keys was not written through
    assert (dest / "job.log").read_text() == "the container's log\n"


def test_run_folder_of_the_container_is_not_world_writable(tmp_path: Path) -> None:
    source = (Path(__file__).parents[3] / "bench" / "targets" / "container.py").read_text()
    assert "0o777" not in source and "0o2770" in source


def test_tar_members_keep_only_the_runs_regular_files(tmp_path: Path) -> None:
    run = tmp_path / RUN_ID
    run.mkdir()
    (run / "run.json").write_text("{}")
    (run / "job.log").symlink_to(f"../{OTHER}/run.json")
    os.mkfifo(run / "fifo")
    tar_path = tmp_path / "r.tar"
    with tarfile.open(tar_path, "w") as tar:
        tar.add(run, arcname=RUN_ID)
    with tarfile.open(tar_path) as tar:
        keep, skipped = jobfiles.tar_members(tar, RUN_ID)
    assert sorted(m.name for m in keep) == [RUN_ID, f"{RUN_ID}/run.json"]
    assert any("job.log: a symbolic link" in s for s in skipped) and any("fifo: a FIFO" in s for s in skipped)
    with tarfile.open(tar_path) as tar, pytest.raises(ValueError, match="unexpected path"):
        jobfiles.tar_members(tar, OTHER)


def test_read_bytes_refuses_links_devices_and_large_files(tmp_path: Path) -> None:
    (tmp_path / "zero").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "big").write_bytes(b"x" * 100)
    for name, words in (("zero", "a symbolic link"), ("fifo", "a FIFO"), ("big", "over the cap")):
        with pytest.raises(jobfiles.JobFileRefused, match=words):
            jobfiles.read_bytes(tmp_path / name, max_bytes=10)
    with pytest.raises(jobfiles.JobFileRefused, match="a device"):
        jobfiles.read_bytes(Path("/dev/zero"), max_bytes=10)


openshift = pytest.importorskip("kubernetes")


def test_openshift_collect_does_not_follow_links_to_another_run(tmp_path: Path, capsys) -> None:
    from bench.targets.manifests import SCHEMA_FILE
    from tests.bench.targets.test_openshift import job_spec, make_target
    from tests.doubles.apiserver import OpenShiftApiDouble

    volume = tmp_path / "pvc"
    volume.mkdir()
    double = OpenShiftApiDouble("atlas-biggan", volume, SCHEMA_FILE).start()
    try:
        double.add_buildconfig("atlas-biggan")
        target = make_target(tmp_path, double)
        target.submit(job_spec())
        job = next(iter(double.jobs))
        double.add_job_pod(job, "Succeeded", terminated="Completed", started=time.time() - 5)
        double.finish_job(job, "Complete")
        planted = plant(volume / RUN_ID, tmp_path)
        before = {k: p.read_bytes() for k, p in planted.items()}
        dest = collect_run(target, RUN_ID, tmp_path / "results").path
    finally:
        double.stop()
    out = capsys.readouterr().out
    check_outcome(dest, planted, out, before)
    assert "job.log: a symbolic link" in out
