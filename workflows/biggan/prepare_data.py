"""`prepare-data`: convert an image folder (one sub-folder per class) into one HDF5 file.

Reading thousands of small JPEGs from a network file system starves a GPU; one HDF5
file read in chunks does not. Images are centre-cropped and resized exactly as the
`imagefolder` source does, so both sources give the same tensors.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

from workflows.biggan.config import RESOLUTIONS
from workflows.biggan.data import load_image, scan_image_folder
from workflows.biggan.errors import WorkloadConfigError


def convert(src: Path, out: Path, resolution: int, chunk: int = 256) -> int:
    """Write `images` (N, R, R, 3) uint8, `labels` (N,) int64 and the class names; returns N.

    The file is written under a temporary name and renamed when complete.
    """
    import h5py

    classes, items = scan_image_folder(src)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    n = len(items)
    try:
        with h5py.File(tmp, "w") as f:
            images = f.create_dataset(
                "images",
                (n, resolution, resolution, 3),
                dtype=np.uint8,
                chunks=(min(chunk, n), resolution, resolution, 3),
            )
            f.create_dataset("labels", data=np.array([label for _, label in items], dtype=np.int64))
            f.attrs["classes"] = json.dumps(classes)
            f.attrs["resolution"] = resolution
            f.attrs["source"] = str(src)
            for lo in range(0, n, chunk):
                batch = items[lo : lo + chunk]
                images[lo : lo + len(batch)] = np.stack([load_image(path, resolution) for path, _ in batch])
                print(f"prepare-data: {min(lo + chunk, n)}/{n} images", file=sys.stderr, flush=True)
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return n


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        allow_abbrev=False,
        prog="python -m workflows.biggan prepare-data",
        description="Convert an image folder (SRC/<class>/<image>) into one HDF5 file for "
        "data.source=hdf5. Images are centre-cropped and resized to --resolution.",
    )
    p.add_argument("src", type=Path, help="folder with one sub-folder per class")
    p.add_argument("out", type=Path, help="HDF5 file to write (e.g. imagenet128.h5)")
    p.add_argument("--resolution", type=int, required=True, choices=RESOLUTIONS, help="image side in pixels")
    p.add_argument("--chunk", type=int, default=256, help="images per HDF5 chunk and per write (default 256)")
    return p


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.chunk <= 0:
        raise WorkloadConfigError(f"--chunk={args.chunk} must be > 0")
    n = convert(args.src, args.out, args.resolution, args.chunk)
    print(
        f"prepare-data: wrote {n} images to {args.out}; train with --set data.source=hdf5 --set data.path={args.out}",
        file=sys.stderr,
    )
    return 0
