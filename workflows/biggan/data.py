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


_M32 = 0xFFFFFFFF


def _hash32(x: torch.Tensor) -> torch.Tensor:
    """A 32-bit integer hash on int64 tensors (values < 2^32): the same on every device."""
    x = (((x >> 16) ^ x) * 0x45D9F3B) & _M32
    x = (((x >> 16) ^ x) * 0x45D9F3B) & _M32
    return (x >> 16) ^ x


class SyntheticImages(Dataset):
    """Deterministic class-conditional images made on the fly from (seed, index).

    Each class has its own colour and stripe orientation/frequency, so a conditional
    GAN has something class-dependent to learn; every image adds its own phase and noise.
    The randomness is a counter-based hash of (seed, index, pixel) in integer arithmetic,
    so a whole batch is made in one go on the training device, and image i is the same
    on any device and in any batch.
    """

    def __init__(self, size: int, resolution: int, n_classes: int, seed: int) -> None:
        self.size, self.res, self.n_classes, self.seed = size, resolution, n_classes, seed
        g = torch.Generator().manual_seed(seed)
        self.colors = torch.rand(n_classes, 3, 1, 1, generator=g) * 2 - 1
        axis = torch.linspace(0, 1, resolution)
        self.yy, self.xx = torch.meshgrid(axis, axis, indexing="ij")
        labels = torch.arange(n_classes)
        angle = 2 * math.pi * labels / n_classes
        self.freq = (1 + labels % 4).float()
        self.dirs = torch.stack([torch.cos(angle), torch.sin(angle)], 1)
        self._on: dict[torch.device, tuple[torch.Tensor, ...]] = {}

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        x, y = self.batch(torch.tensor([i]))
        return x[0], int(y[0])

    def _tables(self, device: torch.device) -> tuple[torch.Tensor, ...]:
        if device not in self._on:
            self._on[device] = tuple(t.to(device) for t in (self.colors, self.xx, self.yy, self.freq, self.dirs))
        return self._on[device]

    def batch(self, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Images and labels for the int64 indices `idx`, made on `idx`'s device."""
        colors, xx, yy, freq, dirs = self._tables(idx.device)
        n, r = idx.shape[0], self.res
        label = idx % self.n_classes
        key = _hash32(_hash32(torch.full_like(idx, self.seed & _M32)) ^ (idx & _M32))  # per image
        half = 3 * r * r // 2 + 1  # one hash gives two 16-bit uniforms -> two normals
        counter = torch.arange(half + 1, device=idx.device)
        bits = _hash32((key[:, None] + counter * 0x9E3779B9) & _M32)
        u1 = ((bits >> 16).float() + 0.5) / 65536.0
        u2 = ((bits & 0xFFFF).float() + 0.5) / 65536.0
        phase = u1[:, 0] * (2 * math.pi)
        radius, theta = torch.sqrt(-2.0 * torch.log(u1[:, 1:])), (2 * math.pi) * u2[:, 1:]
        noise = torch.cat([radius * torch.cos(theta), radius * torch.sin(theta)], 1)[:, : 3 * r * r]
        d = dirs[label]
        proj = xx * d[:, 0, None, None] + yy * d[:, 1, None, None]
        wave = torch.sin((2 * math.pi) * freq[label, None, None] * proj + phase[:, None, None])
        img = colors[label] * (0.5 + 0.4 * wave.unsqueeze(1)) + 0.15 * noise.view(n, 3, r, r)
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
        for idx in self.index_tensors(torch.device("cpu")):
            yield idx.tolist()

    def index_tensors(self, device: torch.device) -> Iterator[torch.Tensor]:
        """The same batches as int64 tensors on `device`: one copy per epoch, none per batch."""
        k = self.start
        epoch, perm = -1, torch.empty(0, dtype=torch.long)
        while True:
            e, j = divmod(k, self.per_epoch)
            if e != epoch:
                epoch, perm = e, self._perm(e).to(device)
            lo = j * self.batch + self.rank * self.per_rank
            yield perm[lo : lo + self.per_rank]
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


Batches = Iterator[tuple[torch.Tensor, torch.Tensor]]


def device_batches(
    dataset: Dataset,
    c: dict[str, Any],
    rank: int,
    world_size: int,
    start: int,
    device: torch.device,
    fmt: torch.memory_format,
) -> Batches:
    """Endless (images, labels) on `device` from data position `start`.

    Synthetic images are made in whole batches on the device itself; files go through the
    DataLoader (worker processes, pinned memory) and a one-batch device prefetch.
    """
    if isinstance(dataset, SyntheticImages):
        plan = BatchPlan(len(dataset), c["train.batch_size"], c["train.seed"], rank, world_size, start)
        return (_formatted(*dataset.batch(idx), fmt) for idx in plan.index_tensors(device))
    loader = build_loader(dataset, c, rank, world_size, start, device.type == "cuda")
    return prefetch(iter(loader), device, fmt)


def _formatted(x: torch.Tensor, y: torch.Tensor, fmt: torch.memory_format) -> tuple[torch.Tensor, torch.Tensor]:
    return x.contiguous(memory_format=fmt), y


def prefetch(
    batches: Iterator[tuple[torch.Tensor, torch.Tensor]], device: torch.device, fmt: torch.memory_format
) -> Batches:
    """Copy the next batch to the GPU on a side stream while the current one trains.

    The copy is `non_blocking` (from pinned memory it does not wait for the GPU); the
    training stream waits for it only when the batch is handed out, and `record_stream`
    keeps the allocator from reusing its memory while the training stream still reads it.
    """
    if device.type != "cuda":
        for x, y in batches:
            yield _formatted(x.to(device), y.to(device), fmt)
        return
    side = torch.cuda.Stream(device)

    def load() -> tuple[torch.Tensor, torch.Tensor]:
        x, y = next(batches)
        with torch.cuda.stream(side):
            return _formatted(x.to(device, non_blocking=True), y.to(device, non_blocking=True), fmt)

    nxt = load()
    while True:
        main = torch.cuda.current_stream(device)
        main.wait_stream(side)
        x, y = nxt
        x.record_stream(main)
        y.record_stream(main)
        nxt = load()
        yield x, y
