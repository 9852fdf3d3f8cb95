"""A STAND-IN for the reference BigGAN-PyTorch tree, so the GPU proof's rehearsal runs its reference cells.

    python benchmarks/reference_stand_in.py DIR   # writes DIR/{BigGAN,BigGANdeep,losses,utils}.py

The real reference (https://github.com/ajbrock/BigGAN-PyTorch) is not in this repository
and is not fetched at run time. The rehearsal (`benchmarks/gpu_proof.py --rehearse`, run in
`make test`) still wants the reference path exercised end to end: the timing script
imports the modules from REF_DIR, builds G, D, G_D, the EMA and the noise, steps them,
prints its JSON line, and the proof computes a ratio from it. This writes tiny modules
with the same interface (written here from the interface the timing script calls, not
from the reference's code): one linear layer per model. Its module sets `STAND_IN = True`,
so the timing script reports `"stand_in": true` and the proof labels every figure taken
from it as the stand-in's: a plumbing check, never a speed-up over the reference.
"""

from __future__ import annotations

import sys
from pathlib import Path

MODELS = '''"""STAND-IN for the reference's {name} module (Atlas's GPU-proof rehearsal): not BigGAN."""
import torch
from torch import nn
import torch.nn.functional as F

STAND_IN = True


class Generator(nn.Module):
    def __init__(self, dim_z=128, resolution=32, n_classes=10, shared_dim=0, G_lr=2e-4, **_):
        super().__init__()
        self.resolution = resolution
        self.shared = nn.Embedding(n_classes, shared_dim or dim_z)
        self.linear = nn.Linear(dim_z + (shared_dim or dim_z), 3 * 8 * 8)
        self.optim = torch.optim.Adam(self.parameters(), lr=G_lr, betas=(0.0, 0.999))

    def forward(self, z, y):
        x = self.linear(torch.cat([z, y], 1)).view(-1, 3, 8, 8)
        return torch.tanh(F.interpolate(x, size=self.resolution))


class Discriminator(nn.Module):
    def __init__(self, n_classes=10, D_lr=2e-4, **_):
        super().__init__()
        self.linear = nn.Linear(3 * 8 * 8, 1)
        self.embed = nn.Embedding(n_classes, 3 * 8 * 8)
        self.optim = torch.optim.Adam(self.parameters(), lr=D_lr, betas=(0.0, 0.999))

    def forward(self, x, y):
        h = F.adaptive_avg_pool2d(x, 8).flatten(1)
        return self.linear(h) + (self.embed(y) * h).sum(1, keepdim=True)


class G_D(nn.Module):
    def __init__(self, G, D):
        super().__init__()
        self.G, self.D = G, D

    def forward(self, z, gy, x=None, dy=None, train_G=False):
        with torch.set_grad_enabled(train_G):
            g_z = self.G(z, self.G.shared(gy))
        if x is None:
            return self.D(g_z, gy)
        out = self.D(torch.cat([g_z, x], 0), torch.cat([gy, dy], 0))
        return torch.split(out, [g_z.shape[0], x.shape[0]])
'''

LOSSES = '''"""STAND-IN for the reference's losses module (hinge losses)."""
import torch.nn.functional as F


def discriminator_loss(dis_fake, dis_real):
    return F.relu(1.0 - dis_real).mean(), F.relu(1.0 + dis_fake).mean()


def generator_loss(dis_fake):
    return -dis_fake.mean()
'''

UTILS = '''"""STAND-IN for the reference's utils module: grad toggles, EMA, noise."""
import torch


def toggle_grad(model, on):
    for p in model.parameters():
        p.requires_grad = on


class ema:
    def __init__(self, source, target, decay=0.9999, start_itr=0):
        self.source, self.target, self.decay, self.start_itr = source, target, decay, start_itr

    def update(self, itr=None):
        decay = 0.0 if itr is not None and itr < self.start_itr else self.decay
        with torch.no_grad():
            for s, t in zip(self.source.parameters(), self.target.parameters()):
                t.copy_(t * decay + s * (1 - decay))


def prepare_z_y(G_batch_size, dim_z, nclasses, device="cuda", **_):
    z = torch.randn(G_batch_size, dim_z, device=device)
    y = torch.zeros(G_batch_size, device=device, dtype=torch.int64)
    return z, y
'''

README = """STAND-IN, not ajbrock/BigGAN-PyTorch: tiny modules with the reference's interface, written by
benchmarks/reference_stand_in.py so the GPU proof's rehearsal can run its reference cells.
Figures timed on this tree are plumbing checks, never the reference's speed.
"""


def write_stand_in(folder: Path) -> Path:
    """Write the stand-in tree into `folder` (created) and return it; REF_DIR may then name it."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("BigGAN", "BigGANdeep"):
        (folder / f"{name}.py").write_text(MODELS.format(name=name), encoding="utf-8")
    (folder / "losses.py").write_text(LOSSES, encoding="utf-8")
    (folder / "utils.py").write_text(UTILS, encoding="utf-8")
    (folder / "STAND_IN.txt").write_text(README, encoding="utf-8")
    return folder


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python benchmarks/reference_stand_in.py DIR")
    print(write_stand_in(Path(sys.argv[1])))
