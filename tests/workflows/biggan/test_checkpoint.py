"""Checkpoint bundles: atomic, pruned, validated; a corrupt latest one falls back."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from tests.fullfs import fill
from tests.workflows.biggan.conftest import events, last, run_workload
from workflows.biggan import checkpoint as ckpt
from workflows.biggan.errors import WorkloadConfigError

JOB = ("train.max_iters=8", "train.checkpoint_every=2", "train.checkpoint_keep=3", "train.sample_grid=false")


@pytest.fixture(scope="module")
def job_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One uninterrupted run of JOB, trained once for the tests that start from it.

    Its folder is never changed: a test that corrupts a checkpoint or resumes works on its
    own copy (`copy_of_job_run`). The run is deterministic on the CPU, so its weights are
    the uninterrupted digest every resume of JOB must reproduce.
    """
    run_dir = tmp_path_factory.mktemp("job") / "run"
    proc = run_workload(run_dir, *JOB)
    assert proc.returncode == 0, proc.stderr
    return run_dir


def copy_of_job_run(job_run: Path, where: Path) -> Path:
    """A copy of the shared run in `where` (the test's own folder), as if it had trained there."""
    shutil.copytree(job_run, where)
    return where


def _bundle(iteration: int) -> dict:
    return {
        "iteration": iteration,
        "data_position": 2 * iteration,
        "images_seen": 0,
        "G": {"w": torch.ones(2)},
        "D": {},
        "G_ema": {},
        "g_optim": {},
        "d_optim": {},
        "rng": ckpt.capture_rng(torch.Generator()),
        "config_sha256": "x",
    }


def test_save_is_atomic_and_keeps_the_last_k(tmp_path: Path) -> None:
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / ".ckpt-stale.tmp").write_bytes(b"half a file")
    for i in (1, 2, 3, 4):
        ckpt.save(tmp_path, _bundle(i), keep=2)
    names = sorted(p.name for p in (tmp_path / "checkpoints").iterdir() if not p.name.endswith(".sha256"))
    assert names == ["ckpt-00000003.pt", "ckpt-00000004.pt"]  # the stale temporary is gone too
    bundle, path = ckpt.load_latest(tmp_path)
    assert path.name == "ckpt-00000004.pt" and bundle["data_position"] == 8
    assert torch.equal(bundle["G"]["w"], torch.ones(2))


def test_foreign_file_is_rejected_with_its_name(tmp_path: Path) -> None:
    bad = tmp_path / "ckpt-00000001.pt"
    torch.save({"hello": 1}, bad)
    with pytest.raises(WorkloadConfigError, match="ckpt-00000001.pt is not an Atlas BigGAN checkpoint"):
        ckpt.load_file(bad)


def test_state_digest_is_layout_independent() -> None:
    a = {"w": torch.arange(24.0).view(2, 3, 2, 2)}
    b = {"w": a["w"].to(memory_format=torch.channels_last)}
    assert ckpt.state_sha256(a) == ckpt.state_sha256(b)
    assert ckpt.state_sha256(a) != ckpt.state_sha256({"w": a["w"] + 1})


@pytest.mark.slow
def test_corrupt_latest_checkpoint_falls_back_to_the_previous(tmp_path: Path, job_run: Path) -> None:
    run_dir = copy_of_job_run(job_run, tmp_path / "run")
    folder = run_dir / "checkpoints"
    kept = [p.name for p in ckpt.list_checkpoints(run_dir)]
    assert kept == ["ckpt-00000008.pt", "ckpt-00000006.pt", "ckpt-00000004.pt"]
    latest = folder / "ckpt-00000008.pt"
    latest.write_bytes(latest.read_bytes()[: latest.stat().st_size // 2])  # torn by a crash

    again = run_workload(run_dir, *JOB)
    assert again.returncode == 0, again.stderr
    assert "ckpt-00000008.pt is corrupt" in again.stderr and "trying the previous checkpoint" in again.stderr
    evts = events(run_dir)
    start = last(evts, "run_start")
    assert start["resumed_from"] == "ckpt-00000006.pt" and start["iteration"] == 6
    assert evts[-1]["status"] == "success" and evts[-1]["iteration"] == 8
    # retraining 7..8 from the fallback reproduces the first run's weights
    first_stop = [e for e in evts if e["event"] == "run_stop"][0]
    assert evts[-1]["g_sha256"] == first_stop["g_sha256"]


@pytest.mark.slow
def test_no_readable_checkpoint_is_an_error_not_a_silent_restart(tmp_path: Path) -> None:
    folder = tmp_path / "run" / "checkpoints"
    folder.mkdir(parents=True)
    (folder / "ckpt-00000004.pt").write_bytes(b"not a checkpoint")
    proc = run_workload(tmp_path / "run", *JOB)
    assert proc.returncode == 2
    assert "no usable checkpoint" in proc.stderr and "ckpt-00000004.pt" in proc.stderr
    assert (folder / "ckpt-00000004.pt").read_bytes() == b"not a checkpoint"  # nothing recorded is touched


@pytest.mark.slow
def test_resuming_with_another_model_is_refused(tmp_path: Path, job_run: Path) -> None:
    run_dir = copy_of_job_run(job_run, tmp_path / "run")  # trained with model.g_ch=4 (smoke)
    proc = run_workload(run_dir, "train.max_iters=10", "model.g_ch=8")
    assert proc.returncode == 2
    assert "different model (model.g_ch=4 there, 8 now)" in proc.stderr


def test_each_bundle_has_its_digest_and_pruning_takes_the_digest_too(tmp_path: Path) -> None:
    for i in (1, 2, 3):
        ckpt.save(tmp_path, _bundle(i), keep=2)
    names = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert names == ["ckpt-00000002.pt", "ckpt-00000002.pt.sha256", "ckpt-00000003.pt", "ckpt-00000003.pt.sha256"]
    latest = tmp_path / "checkpoints" / "ckpt-00000003.pt"
    digest = (tmp_path / "checkpoints" / "ckpt-00000003.pt.sha256").read_text().split()
    assert digest == [ckpt.file_sha256(latest), "ckpt-00000003.pt"]


def _flip_tensor_byte(path: Path) -> None:
    """Flip one bit inside a tensor's stored bytes (not the zip's structure): torch.load
    alone reads such a file without complaint."""
    import zipfile

    with zipfile.ZipFile(path) as zf:
        info = next(i for i in zf.infolist() if "/data/" in i.filename and i.file_size >= 4)
    raw = bytearray(path.read_bytes())
    # the member's data follows its 30-byte local header, name and extra field
    name_len = int.from_bytes(raw[info.header_offset + 26 : info.header_offset + 28], "little")
    extra_len = int.from_bytes(raw[info.header_offset + 28 : info.header_offset + 30], "little")
    raw[info.header_offset + 30 + name_len + extra_len] ^= 0x01
    path.write_bytes(bytes(raw))


def test_a_flipped_bit_in_tensor_data_is_caught_and_the_previous_bundle_used(tmp_path: Path) -> None:
    for i in (1, 2):
        ckpt.save(tmp_path, _bundle(i), keep=3)
    latest = tmp_path / "checkpoints" / "ckpt-00000002.pt"
    _flip_tensor_byte(latest)
    torch.load(latest, weights_only=True)  # torch alone does not notice
    bundle, path = ckpt.load_latest(tmp_path)
    assert path.name == "ckpt-00000001.pt" and bundle["iteration"] == 1


def test_a_bundle_without_digest_is_checked_by_its_zip_crcs(tmp_path: Path) -> None:
    ckpt.save(tmp_path, _bundle(1), keep=3)
    only = tmp_path / "checkpoints" / "ckpt-00000001.pt"
    (tmp_path / "checkpoints" / "ckpt-00000001.pt.sha256").unlink()  # as written before digests
    assert ckpt.load_file(only)["iteration"] == 1
    _flip_tensor_byte(only)
    with pytest.raises(WorkloadConfigError, match="ckpt-00000001.pt is corrupt"):
        ckpt.load_file(only)


@pytest.mark.slow
def test_corrupt_checkpoint_in_a_real_run_resumes_to_the_uninterrupted_digest(tmp_path: Path, job_run: Path) -> None:
    run_dir = copy_of_job_run(job_run, tmp_path / "run")
    want = last(events(run_dir), "run_stop")["g_sha256"]
    _flip_tensor_byte(run_dir / "checkpoints" / "ckpt-00000008.pt")
    again = run_workload(run_dir, *JOB)
    assert again.returncode == 0, again.stderr
    assert "ckpt-00000008.pt is corrupt" in again.stderr and "trying the previous checkpoint" in again.stderr
    assert last(events(run_dir), "run_start")["resumed_from"] == "ckpt-00000006.pt"
    assert last(events(run_dir), "run_stop")["g_sha256"] == want


def test_no_space_for_a_checkpoint_is_one_line_and_keeps_the_previous(tmp_path: Path) -> None:
    with pytest.raises(ckpt.CheckpointSpaceError, match=r"no space for checkpoint .*ckpt-00000002.pt: needs about"):
        big = _bundle(2)
        big["G"] = {"w": torch.zeros(1)}
        ckpt.check_space(tmp_path, "ckpt-00000002.pt", 1 << 62)
    assert ckpt.tensor_bytes({"a": torch.zeros(10), "b": [torch.zeros(2, dtype=torch.float64)]}) == 56


@pytest.mark.slow
def test_disk_full_during_a_real_run_is_one_line_and_resume_loses_nothing(small_tmpfs: Path, job_run: Path) -> None:
    """A real small tmpfs: the first checkpoints fit, then ballast leaves too little room;
    the run stops with one error line, the previous bundle intact, and a rerun after
    freeing space resumes from it to the uninterrupted weights (the shared run's)."""
    want = last(events(job_run), "run_stop")["g_sha256"]
    run_dir = small_tmpfs / "run"
    assert run_workload(run_dir, "train.max_iters=4", *JOB[1:]).returncode == 0
    ballast = fill(small_tmpfs, leave=256 << 10)  # room for log lines, not for a bundle
    proc = run_workload(run_dir, *JOB)
    assert proc.returncode == 74, proc.stderr  # disk full, not "bad configuration"
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("biggan: error:")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "no space for checkpoint" in errors[0] and "ckpt-00000006.pt" in errors[0], errors
    assert ckpt.load_latest(run_dir)[1].name == "ckpt-00000004.pt"
    ballast.unlink()
    again = run_workload(run_dir, *JOB)
    assert again.returncode == 0, again.stderr
    assert last(events(run_dir), "run_stop")["g_sha256"] == want


def test_enospc_in_the_middle_of_a_write_is_one_error_and_leaves_no_partial_file(
    small_tmpfs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The free-space check passed (here: switched off), yet the disk fills during the
    write: torch's RuntimeError becomes one CheckpointSpaceError; no temporary remains."""
    ckpt.save(small_tmpfs, _bundle(1), keep=3)
    fill(small_tmpfs, leave=4096)
    monkeypatch.setattr(ckpt, "check_space", lambda *a: None)
    big = _bundle(2)
    big["G"] = {"w": torch.ones(1 << 20)}  # 4 MB: more than is left
    with pytest.raises(ckpt.CheckpointSpaceError, match=r"disk full while writing checkpoint .*ckpt-00000002.pt"):
        ckpt.save(small_tmpfs, big, keep=1)
    left = sorted(p.name for p in (small_tmpfs / "checkpoints").iterdir())
    assert left == ["ckpt-00000001.pt", "ckpt-00000001.pt.sha256"]
    assert ckpt.load_latest(small_tmpfs)[0]["iteration"] == 1
