"""Image folder -> HDF5 converter round-trips; both sources feed training the same tensors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch
from PIL import Image

from tests.workflows.biggan.conftest import REPO, env, events, run_workload
from workflows.biggan.__main__ import main
from workflows.biggan.data import HDF5Images, ImageFolderImages


def _make_folder(root: Path) -> None:
    rng = np.random.default_rng(0)
    for ci, cls in enumerate(["cat", "dog", "emu"]):
        (root / cls).mkdir(parents=True)
        for j in range(4):
            size = (40 + 8 * j, 36)  # not square, not 32: exercises crop and resize
            arr = rng.integers(0, 256, size=(size[1], size[0], 3), dtype=np.uint8)
            arr[..., ci] = 255
            Image.fromarray(arr).save(root / cls / f"{j}.png" if j % 2 else root / cls / f"{j}.jpg")
    (root / "dog" / "notes.txt").write_text("not an image")


def test_round_trip(tmp_path: Path) -> None:
    src, out = tmp_path / "images", tmp_path / "data.h5"
    _make_folder(src)
    assert main(["prepare-data", str(src), str(out), "--resolution", "32", "--chunk", "5"]) == 0
    with h5py.File(out, "r") as f:
        assert f["images"].shape == (12, 32, 32, 3) and f["images"].dtype == np.uint8
        assert f["labels"][:].tolist() == [0] * 4 + [1] * 4 + [2] * 4
        assert json.loads(f.attrs["classes"]) == ["cat", "dog", "emu"]
    folder, h5 = ImageFolderImages(src, 32), HDF5Images(out, 32)
    assert len(folder) == len(h5) == 12 and h5.classes == folder.classes
    for i in range(12):
        (xa, ya), (xb, yb) = folder[i], h5[i]
        assert ya == yb and torch.equal(xa, xb)
        assert xa.shape == (3, 32, 32) and -1 <= xa.min() and xa.max() <= 1
    assert not list(tmp_path.glob("*.tmp"))


def test_wrong_resolution_and_bad_files_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, out = tmp_path / "images", tmp_path / "data.h5"
    _make_folder(src)
    assert main(["prepare-data", str(src), str(out), "--resolution", "32"]) == 0
    assert (
        main(
            [
                "--experiment",
                "smoke",
                "--run-dir",
                str(tmp_path / "r"),
                "--set",
                "data.source=hdf5",
                "--set",
                f"data.path={out}",
                "--set",
                "model.resolution=64",
            ]
        )
        == 2
    )
    assert "expected (N, 64, 64, 3) for model.resolution=64" in capsys.readouterr().err
    junk = tmp_path / "junk.h5"
    junk.write_bytes(b"nope")
    assert (
        main(
            [
                "--experiment",
                "smoke",
                "--run-dir",
                str(tmp_path / "r"),
                "--set",
                "data.source=hdf5",
                "--set",
                f"data.path={junk}",
            ]
        )
        == 2
    )
    assert "junk.h5" in capsys.readouterr().err
    assert main(["prepare-data", str(tmp_path / "missing"), str(out), "--resolution", "32"]) == 2
    assert "is not a directory" in capsys.readouterr().err


@pytest.mark.slow
def test_training_on_hdf5_and_imagefolder(tmp_path: Path) -> None:
    src, out = tmp_path / "images", tmp_path / "data.h5"
    _make_folder(src)
    conv = subprocess.run(
        [sys.executable, "-m", "workflows.biggan", "prepare-data", str(src), str(out), "--resolution", "32"],
        cwd=REPO,
        env=env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert conv.returncode == 0, conv.stderr
    common = ("train.max_iters=2", "train.batch_size=4", "model.n_classes=3", "train.sample_grid=false")
    a = run_workload(tmp_path / "h5", "data.source=hdf5", f"data.path={out}", *common)
    b = run_workload(tmp_path / "folder", "data.source=imagefolder", f"data.path={src}", *common)
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    # the same pixels through either source train the same weights
    assert events(tmp_path / "h5")[-1]["g_sha256"] == events(tmp_path / "folder")[-1]["g_sha256"]


@pytest.mark.slow
def test_corrupt_image_is_named_and_the_run_ends_failed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "images"
    _make_folder(src)
    (src / "emu" / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n not really")
    assert main(["prepare-data", str(src), str(tmp_path / "d.h5"), "--resolution", "32"]) == 2
    assert "broken.png: cannot read the image" in capsys.readouterr().err
    assert not (tmp_path / "d.h5").exists() and not list(tmp_path.glob("*.tmp"))

    # during training the bad file surfaces in the first batch (all 13 images): exit 2, run_stop failed
    run = run_workload(
        tmp_path / "run",
        "data.source=imagefolder",
        f"data.path={src}",
        "model.n_classes=3",
        "train.batch_size=13",
        "train.max_iters=2",
    )
    assert run.returncode == 2
    assert "broken.png: cannot read the image" in run.stderr
    stop = events(tmp_path / "run")[-1]
    assert stop["event"] == "run_stop" and stop["status"] == "failed" and stop["iteration"] == 0
