"""Real images for D: synthetic (default, no files), an image folder, or an HDF5 file.

Batches come from a seeded, resumable plan: global batch k is a fixed function of
(seed, k), so a run resumed at data position k sees exactly the batches the
uninterrupted run would have seen, on any number of processes.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from workflows.biggan.errors import WorkloadConfigError

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".ppm", ".webp", ".tif", ".tiff")


def to_tensor(img: np.ndarray) -> torch.Tensor:
    """HWC uint8 -> CHW float in [-1, 1]."""
    return torch.from_numpy(np.ascontiguousarray(img)).permute(2, 0, 1).float().div(127.5).sub(1.0)


class SyntheticImages(Dataset):
    """Deterministic class-conditional images made on the fly from (seed, index).

    Each class has its own colour and stripe orientation/frequency, so a conditional
    GAN has something class-dependent to learn; every image adds its own phase and noise.
    """

    def __init__(self, size: int, resolution: int, n_classes: int, seed: int) -> None:
        self.size, self.res, self.n_classes, self.seed = size, resolution, n_classes, seed
        g = torch.Generator().manual_seed(seed)
        self.colors = torch.rand(n_classes, 3, 1, 1, generator=g) * 2 - 1
        axis = torch.linspace(0, 1, resolution)
        self.yy, self.xx = torch.meshgrid(axis, axis, indexing="ij")

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        label = i % self.n_classes
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + i)
        angle = 2 * math.pi * label / self.n_classes
        freq = 1 + label % 4
        phase = float(torch.rand((), generator=g)) * 2 * math.pi
        wave = torch.sin(2 * math.pi * freq * (self.xx * math.cos(angle) + self.yy * math.sin(angle)) + phase)
        noise = torch.randn(3, self.res, self.res, generator=g)
        img = self.colors[label] * (0.5 + 0.4 * wave.unsqueeze(0)) + 0.15 * noise
        return img.clamp(-1, 1), label


def load_image(path: Path, resolution: int) -> np.ndarray:
    """Centre-crop to a square, resize to `resolution`, RGB uint8 HWC (shared with prepare-data)."""
    from PIL import Image

    try:
        with Image.open(path) as im:
            im = im.convert("RGB")
            w, h = im.size
            side = min(w, h)
            left, top = (w - side) // 2, (h - side) // 2
            im = im.crop((left, top, left + side, top + side))
            if side != resolution:
                im = im.resize((resolution, resolution), Image.BICUBIC)
            return np.array(im, dtype=np.uint8)  # a writable copy
    except OSError as exc:
        raise WorkloadConfigError(f"{path}: cannot read the image: {exc}") from exc


def scan_image_folder(root: Path) -> tuple[list[str], list[tuple[Path, int]]]:
    """Classes = sorted sub-folders of `root`; items = (image file, class index), sorted."""
    if not root.is_dir():
        raise WorkloadConfigError(f"data.path {str(root)!r} is not a directory (expected one sub-folder per class)")
    classes = sorted(p.name for p in root.iterdir() if p.is_dir())
    items = [
        (f, ci)
        for ci, cls in enumerate(classes)
        for f in sorted((root / cls).rglob("*"))
        if f.suffix.lower() in IMAGE_SUFFIXES
    ]
    if not items:
        raise WorkloadConfigError(
            f"data.path {str(root)!r} holds no images in class sub-folders (looked for {', '.join(IMAGE_SUFFIXES)})"
        )
    return classes, items


class ImageFolderImages(Dataset):
    def __init__(self, root: Path, resolution: int) -> None:
        self.classes, self.items = scan_image_folder(root)
        self.res = resolution

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        path, label = self.items[i]
        return to_tensor(load_image(path, self.res)), label


class HDF5Images(Dataset):
    """`images` (N, R, R, 3) uint8 and `labels` (N,) from prepare-data; opened per worker."""

    def __init__(self, path: Path, resolution: int) -> None:
        import h5py

        self.path, self._file, self._pid = path, None, -1
        try:
            with h5py.File(path, "r") as f:
                shape = f["images"].shape
                n_labels = f["labels"].shape[0]
                self.classes = json.loads(f.attrs.get("classes", "[]"))
        except (OSError, KeyError, ValueError) as exc:
            raise WorkloadConfigError(
                f"data.path {str(path)!r}: not an HDF5 file from prepare-data ({exc}); "
                f"make one with `python -m workflows.biggan prepare-data SRC OUT.h5 --resolution {resolution}`"
            ) from exc
        if len(shape) != 4 or shape[1:] != (resolution, resolution, 3) or n_labels != shape[0]:
            raise WorkloadConfigError(
                f"data.path {str(path)!r}: images have shape {shape} with {n_labels} labels, expected "
                f"(N, {resolution}, {resolution}, 3) for model.resolution={resolution}"
            )
        self.size = shape[0]

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        import h5py

        if self._file is None or self._pid != os.getpid():  # one handle per worker process
            self._file, self._pid = h5py.File(self.path, "r"), os.getpid()
        return to_tensor(self._file["images"][i]), int(self._file["labels"][i])


def build_dataset(c: dict[str, Any]) -> Dataset:
    res, n_classes = c["model.resolution"], c["model.n_classes"]
    source = c["data.source"]
    if source == "synthetic":
        return SyntheticImages(c["data.synthetic_size"], res, n_classes, c["train.seed"])
    path = Path(c["data.path"]).expanduser()
    ds: ImageFolderImages | HDF5Images
    if source == "imagefolder":
        ds = ImageFolderImages(path, res)
    else:
        if not path.is_file():
            raise WorkloadConfigError(
                f"data.path {str(path)!r} does not exist (expected an HDF5 file from prepare-data)"
            )
        ds = HDF5Images(path, res)
    if ds.classes and len(ds.classes) > n_classes:
        raise WorkloadConfigError(
            f"data.path {str(path)!r} has {len(ds.classes)} classes but model.n_classes={n_classes}; "
            f"set --set model.n_classes={len(ds.classes)}"
        )
    return ds


class BatchPlan(Sampler[list[int]]):
    """This process's share of global batch k, k = start, start+1, ... (endless).

    Epoch e is a permutation seeded by (seed, e); the last partial batch of an epoch is
    dropped so that every global batch has exactly `global_batch` images.
    """

    def __init__(self, n_items: int, global_batch: int, seed: int, rank: int, world_size: int, start: int = 0) -> None:
        if n_items < global_batch:
            raise WorkloadConfigError(f"the data set has {n_items} images, fewer than train.batch_size={global_batch}")
        self.n, self.batch, self.seed, self.start = n_items, global_batch, seed, start
        self.per_rank = global_batch // world_size
        self.rank = rank
        self.per_epoch = n_items // global_batch

    def _perm(self, epoch: int) -> torch.Tensor:
        return torch.randperm(self.n, generator=torch.Generator().manual_seed(self.seed * 7919 + epoch + 1))

    def __iter__(self) -> Iterator[list[int]]:
        k = self.start
        epoch, perm = -1, torch.empty(0)
        while True:
            e, j = divmod(k, self.per_epoch)
            if e != epoch:
                epoch, perm = e, self._perm(e)
            lo = j * self.batch + self.rank * self.per_rank
            yield perm[lo : lo + self.per_rank].tolist()
            k += 1

    def __len__(self) -> int:  # endless; DataLoader only needs this for len()
        return 2**62


def build_loader(
    dataset: Dataset, c: dict[str, Any], rank: int, world_size: int, start: int, use_cuda: bool
) -> DataLoader:
    """Endless loader from data position `start` (global batches already consumed)."""
    plan = BatchPlan(len(dataset), c["train.batch_size"], c["train.seed"], rank, world_size, start)  # type: ignore[arg-type]
    workers = c["data.workers"]
    pin = {"auto": use_cuda, "true": True, "false": False}[c["data.pin_memory"]]
    extra: dict[str, Any] = {}
    if workers > 0:
        extra = {"prefetch_factor": c["data.prefetch_factor"], "persistent_workers": True}
    return DataLoader(dataset, batch_sampler=plan, num_workers=workers, pin_memory=pin, **extra)
