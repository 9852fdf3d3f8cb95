"""Checkpoint bundles: atomic, pruned, validated; a corrupt latest one falls back."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.workflows.biggan.conftest import events, last, run_workload
from workflows.biggan import checkpoint as ckpt
from workflows.biggan.errors import WorkloadConfigError

JOB = ("train.max_iters=8", "train.checkpoint_every=2", "train.checkpoint_keep=3", "train.sample_grid=false")


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
    names = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
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


def test_corrupt_latest_checkpoint_falls_back_to_the_previous(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    first = run_workload(run_dir, *JOB)
    assert first.returncode == 0, first.stderr
    folder = run_dir / "checkpoints"
    assert sorted(p.name for p in folder.iterdir()) == ["ckpt-00000004.pt", "ckpt-00000006.pt", "ckpt-00000008.pt"]
    latest = folder / "ckpt-00000008.pt"
    latest.write_bytes(latest.read_bytes()[: latest.stat().st_size // 2])  # torn by a crash

    again = run_workload(run_dir, *JOB)
    assert again.returncode == 0, again.stderr
    assert "ckpt-00000008.pt is unreadable" in again.stderr and "trying the previous checkpoint" in again.stderr
    evts = events(run_dir)
    start = last(evts, "run_start")
    assert start["resumed_from"] == "ckpt-00000006.pt" and start["iteration"] == 6
    assert evts[-1]["status"] == "success" and evts[-1]["iteration"] == 8
    # retraining 7..8 from the fallback reproduces the first run's weights
    first_stop = [e for e in evts if e["event"] == "run_stop"][0]
    assert evts[-1]["g_sha256"] == first_stop["g_sha256"]


def test_no_readable_checkpoint_is_an_error_not_a_silent_restart(tmp_path: Path) -> None:
    folder = tmp_path / "run" / "checkpoints"
    folder.mkdir(parents=True)
    (folder / "ckpt-00000004.pt").write_bytes(b"not a checkpoint")
    proc = run_workload(tmp_path / "run", *JOB)
    assert proc.returncode == 2
    assert "no readable checkpoint" in proc.stderr and "ckpt-00000004.pt" in proc.stderr
    assert (folder / "ckpt-00000004.pt").read_bytes() == b"not a checkpoint"  # nothing recorded is touched


def test_resuming_with_another_model_is_refused(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    assert run_workload(run_dir, "train.max_iters=2", "train.sample_grid=false").returncode == 0
    proc = run_workload(run_dir, "train.max_iters=4", "model.g_ch=8")
    assert proc.returncode == 2
    assert "different model (model.g_ch=4 there, 8 now)" in proc.stderr
