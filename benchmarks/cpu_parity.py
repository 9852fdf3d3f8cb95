"""CPU parity with the reference BigGAN-PyTorch: both arms in ONE process, alternating per iteration.

    REF_DIR=<extracted ajbrock/BigGAN-PyTorch> python benchmarks/cpu_parity.py \\
        [--rounds 3] [--pairs 8] [--warmup 2] [--ch 32] [--batch 16] [--d-steps 2] [--threads 1]

On a shared machine two processes timed one after the other see different neighbours;
here the Atlas trainer (eager, the CPU defaults) and the reference's G/D
(https://github.com/ajbrock/BigGAN-PyTorch, BigGAN.py, losses.py; its training step as
train_fns.GAN_training_function runs it: toggle_grad, concatenated G_D forward, hinge
losses read back each iteration, a state-dict EMA) run the same 32 px configuration
(widths `--ch`, batch, D steps) in one process, the order flipped on every pair so
neither arm always runs on a warmer cache. Each pair gives reference seconds / Atlas
seconds; a round prints the paired median (> 1: Atlas is faster). Prints one JSON line
per round, then a summary line. Asserts nothing (timings are figures, not tests).

`--tiny` runs it at a size that takes seconds, to check it still works (make test runs it:
tests/benchmarks/test_tiny.py); its figures mean nothing.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from workflows.biggan.config import resolve  # noqa: E402
from workflows.biggan.distributed import World  # noqa: E402
from workflows.biggan.trainer import Trainer  # noqa: E402


class Reference:
    """The reference's G, D and one G iteration, as its train_fns runs them (fp32, no accumulation)."""

    def __init__(self, ch: int, batch: int, d_steps: int) -> None:
        sys.path.insert(0, os.environ["REF_DIR"])
        import BigGAN  # type: ignore[import-not-found]  # the reference's own modules
        import losses as ref_losses  # type: ignore[import-not-found]

        self.losses, self.batch, self.d_steps = ref_losses, batch, d_steps
        common = dict(resolution=32, n_classes=10, SN_eps=1e-6)
        self.G = BigGAN.Generator(G_ch=ch, dim_z=128, G_attn="0", G_init="N02", G_lr=2e-4, **common)
        self.D = BigGAN.Discriminator(D_ch=ch, D_attn="0", D_init="N02", D_lr=2e-4, **common)
        self.G_ema = copy.deepcopy(self.G).requires_grad_(False)
        self.GD = BigGAN.G_D(self.G, self.D)
        self.src, self.dst = self.G.state_dict(), self.G_ema.state_dict()
        g = torch.Generator().manual_seed(0)
        self.x = torch.rand(batch * d_steps, 3, 32, 32, generator=g) * 2 - 1
        self.y = torch.randint(10, (batch * d_steps,), generator=g)
        self.z = torch.empty(batch, 128)
        self.yz = torch.empty(batch, dtype=torch.long)

    def _sample(self) -> None:
        self.z.normal_()
        self.yz.random_(0, 10)

    def step(self) -> None:
        G, D, GD, L = self.G, self.D, self.GD, self.losses
        G.optim.zero_grad()
        D.optim.zero_grad()
        D.requires_grad_(True)
        G.requires_grad_(False)
        for i in range(self.d_steps):
            D.optim.zero_grad()
            self._sample()
            sl = slice(i * self.batch, (i + 1) * self.batch)
            d_fake, d_real = GD(self.z, self.yz, self.x[sl], self.y[sl], train_G=False)
            lr, lf = L.loss_hinge_dis(d_fake, d_real)
            (lr + lf).backward()
            D.optim.step()
        D.requires_grad_(False)
        G.requires_grad_(True)
        G.optim.zero_grad()
        self._sample()
        gl = L.loss_hinge_gen(GD(self.z, self.yz, train_G=True))
        gl.backward()
        G.optim.step()
        with torch.no_grad():  # the reference's ema.update: one copy per state-dict entry
            for key in self.src:
                self.dst[key].copy_(self.dst[key] * 0.9999 + self.src[key] * (1 - 0.9999))
        float(gl.item()), float(lr.item()), float(lf.item())


def atlas_trainer(ch: int, batch: int, d_steps: int, run_dir: Path) -> tuple[Trainer, Any]:
    c = resolve(
        "cifar",
        [
            "runtime.device=cpu",
            f"model.g_ch={ch}",
            f"model.d_ch={ch}",
            f"train.batch_size={batch}",
            f"train.d_steps={d_steps}",
            "train.ema_start=0",
            "data.synthetic_size=512",
            "data.workers=0",
        ],
    )
    t = Trainer(c, run_dir, "cifar", world=World())
    return t, t.batches()


def atlas_arm_only(a: argparse.Namespace) -> int:
    """--tiny without the reference: build and step the Atlas arm once, so the script's own
    half is checked where REF_DIR is not set (CI, make test)."""
    torch.set_num_threads(a.threads)
    with tempfile.TemporaryDirectory() as tmp:
        trainer, real = atlas_trainer(a.ch, a.batch, a.d_steps, Path(tmp))
        t0 = time.perf_counter()
        trainer.step(real)
        atlas_s = time.perf_counter() - t0
    print(json.dumps({"tiny": True, "reference": "skipped: no REF_DIR", "atlas_s": round(atlas_s, 4)}))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--pairs", type=int, default=8, help="alternating Atlas/reference iterations per round")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--ch", type=int, default=32)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--d-steps", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="torch threads for both arms (default 1)")
    p.add_argument(
        "--tiny",
        action="store_true",
        help="1 pair of a tiny model (ch 8, batch 2); without REF_DIR the Atlas arm alone: seconds",
    )
    a = p.parse_args(argv)
    if a.tiny:
        a.rounds, a.pairs, a.warmup, a.ch, a.batch, a.d_steps = 1, 1, 0, 8, 2, 1
    if a.tiny and not os.environ.get("REF_DIR"):
        return atlas_arm_only(a)
    if not os.environ.get("REF_DIR"):
        print("cpu_parity: skipped: set REF_DIR to an extracted https://github.com/ajbrock/BigGAN-PyTorch")
        return 2
    torch.set_num_threads(a.threads)
    with tempfile.TemporaryDirectory() as tmp:
        trainer, real = atlas_trainer(a.ch, a.batch, a.d_steps, Path(tmp))
        ref = Reference(a.ch, a.batch, a.d_steps)
        arms = {"atlas": lambda: trainer.step(real), "reference": ref.step}
        for _ in range(a.warmup):
            for fn in arms.values():
                fn()
        medians = []
        for r in range(1, a.rounds + 1):
            ratios, secs = [], {"atlas": [], "reference": []}
            for i in range(a.pairs):
                order = ["atlas", "reference"] if i % 2 == 0 else ["reference", "atlas"]
                for name in order:
                    t0 = time.perf_counter()
                    arms[name]()
                    secs[name].append(time.perf_counter() - t0)
                ratios.append(secs["reference"][-1] / secs["atlas"][-1])
            med = statistics.median(ratios)
            medians.append(med)
            print(
                json.dumps(
                    {
                        "round": r,
                        "pairs": a.pairs,
                        "atlas_s_median": round(statistics.median(secs["atlas"]), 4),
                        "reference_s_median": round(statistics.median(secs["reference"]), 4),
                        "speedup_paired_median": round(med, 3),
                    }
                ),
                flush=True,
            )
    print(
        json.dumps(
            {
                "config": {"ch": a.ch, "batch": a.batch, "d_steps": a.d_steps, "threads": a.threads},
                "speedup_per_round": [round(m, 3) for m in medians],
                "speedup_median": round(statistics.median(medians), 3),
                "torch": torch.__version__,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
