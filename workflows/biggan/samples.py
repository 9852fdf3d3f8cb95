"""`DIR/samples.png`: an 8 x 8 grid from fixed z, classes in order, drawn by G_ema (or G)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from workflows.biggan.progress import line


@torch.no_grad()
def write_samples(t: Any, path: Path) -> None:
    """An 8x8 grid from fixed z (seeded), classes in order, drawn by G_ema (or G)."""
    try:
        from PIL import Image
    except ImportError:
        line("Pillow is not installed: no samples.png")
        return
    g = t.G_ema if t.G_ema is not None else t.G
    was_training = g.training
    g.eval()
    gen = torch.Generator().manual_seed(t.c["train.seed"] + 20_190_101)
    n = 64
    z = torch.randn(n, g.dim_z, generator=gen).to(t.device)
    y = (torch.arange(n) % t.c["model.n_classes"]).to(t.device)
    imgs = torch.cat([g(z[i : i + 16], y[i : i + 16]).float().cpu() for i in range(0, n, 16)])
    g.train(was_training)
    r = t.c["model.resolution"]
    grid = imgs.view(8, 8, 3, r, r).permute(0, 3, 1, 4, 2).reshape(8 * r, 8 * r, 3)
    arr = ((grid.clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8).numpy()
    tmp = path.with_suffix(".png.tmp")
    Image.fromarray(arr).save(tmp, format="PNG")
    os.replace(tmp, path)
