"""Time the reference BigGAN-PyTorch training step, the anchor of Atlas's speed-up targets.

    REF_DIR=<extracted ajbrock/BigGAN-PyTorch> python benchmarks/reference_timing.py CONFIG ITERS [WARMUP]

The reference code (https://github.com/ajbrock/BigGAN-PyTorch, MIT) stays outside this
repository: this script imports its modules from REF_DIR and times them; nothing of it is
copied here. CONFIG is one of its launch scripts' settings, with one accumulation:

- `cifar`: launch_cifar_ema.sh (32 px, ch 64, batch 50, 4 D steps, N02 init, no attention);
- `i128`: launch_BigGAN_bs256x8.sh (128 px, ch 96, batch 256, 1 D step, attention at 64,
  hierarchical z 120, shared embedding 128, ortho init);
- `deep`: launch_BigGAN_deep.sh (BigGAN-deep: ch 128, depth 2, z 128); batch from $BS.

One G iteration does what the reference's train_fns.GAN_training_function does: toggle
requires_grad, D steps, a G step, the per-iteration `.item()` of the losses and the EMA
update, in fp32 as the reference ships. Prints one JSON line (`g_iters_per_s`, images/s,
peak memory, parameter counts). A tree whose BigGAN module sets `STAND_IN = True` (the
rehearsal's `benchmarks/reference_stand_in.py`) is reported as `"stand_in": true`: its
figures time the plumbing, never the reference.
"""

from __future__ import annotations

import copy
import json
import os
import sys
import time
from typing import Any

REF_DIR = os.environ.get("REF_DIR")


def settings(name: str, nn: Any) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(shape, G kwargs, D kwargs) of a launch script, as the reference's model constructors take them."""
    if name == "cifar":
        shape = {"res": 32, "bs": 50, "d_steps": 4, "n_classes": 10, "dim_z": 128, "module": "BigGAN"}
        g = {
            "G_ch": 64,
            "dim_z": 128,
            "resolution": 32,
            "G_attn": "0",
            "n_classes": 10,
            "G_init": "N02",
            "G_lr": 2e-4,
            "SN_eps": 1e-8,
        }
        d = {
            "D_ch": 64,
            "resolution": 32,
            "D_attn": "0",
            "n_classes": 10,
            "D_init": "N02",
            "D_lr": 2e-4,
            "SN_eps": 1e-8,
        }
        return shape, g, d
    if name not in ("i128", "deep"):
        raise SystemExit(f"reference_timing: unknown CONFIG {name!r} (known: cifar, i128, deep)")
    deep = name == "deep"
    ch, dim_z = (128, 128) if deep else (96, 120)
    shape = {
        "res": 128,
        "bs": int(os.environ.get("BS", "256")),
        "d_steps": 1,
        "n_classes": 1000,
        "dim_z": dim_z,
        "module": "BigGANdeep" if deep else "BigGAN",
    }
    g = {
        "G_ch": ch,
        "dim_z": dim_z,
        "resolution": 128,
        "G_attn": "64",
        "n_classes": 1000,
        "G_shared": True,
        "shared_dim": 128,
        "hier": True,
        "G_init": "ortho",
        "G_lr": 1e-4,
        "G_B2": 0.999,
        "adam_eps": 1e-6,
        "SN_eps": 1e-6,
        "BN_eps": 1e-5,
        "G_activation": nn.ReLU(inplace=True),
    }
    d = {
        "D_ch": ch,
        "resolution": 128,
        "D_attn": "64",
        "n_classes": 1000,
        "D_init": "ortho",
        "D_lr": 4e-4,
        "D_B2": 0.999,
        "adam_eps": 1e-6,
        "SN_eps": 1e-6,
        "D_activation": nn.ReLU(inplace=True),
    }
    if deep:
        g["G_depth"], d["D_depth"] = 2, 2
    return shape, g, d


def main(argv: list[str]) -> int:
    if not REF_DIR:
        print("reference_timing: error: set REF_DIR to the extracted ajbrock/BigGAN-PyTorch folder", file=sys.stderr)
        return 2
    if len(argv) < 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    sys.path.insert(0, REF_DIR)
    import importlib

    import torch
    from torch import nn

    name, iters, warm = argv[0], int(argv[1]), int(argv[2]) if len(argv) > 2 else 3
    shape, gk, dk = settings(name, nn)
    models, losses, utils = (importlib.import_module(m) for m in (shape["module"], "losses", "utils"))
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.backends.cudnn.benchmark = True  # the reference's train.py sets it
    bs, d_steps, res, ncls = shape["bs"], shape["d_steps"], shape["res"], shape["n_classes"]
    torch.manual_seed(0)
    G, D = models.Generator(**gk).to(dev), models.Discriminator(**dk).to(dev)
    G_ema = copy.deepcopy(G)
    for p in G_ema.parameters():
        p.requires_grad_(False)
    GD, ema = models.G_D(G, D), utils.ema(G, G_ema, 0.9999, 0)
    z_, y_ = utils.prepare_z_y(bs, shape["dim_z"], ncls, device=dev)
    x_all = torch.randn(bs * d_steps, 3, res, res, device=dev)
    y_all = torch.randint(0, ncls, (bs * d_steps,), device=dev)

    def step(itr: int) -> tuple[float, float, float]:
        G.optim.zero_grad()
        D.optim.zero_grad()
        xs, ys = torch.split(x_all, bs), torch.split(y_all, bs)
        utils.toggle_grad(D, True)
        utils.toggle_grad(G, False)
        for i in range(d_steps):
            D.optim.zero_grad()
            z_.normal_()
            y_.random_(0, ncls)
            d_fake, d_real = GD(z_[:bs], y_[:bs], xs[i], ys[i], train_G=False)
            loss_real, loss_fake = losses.discriminator_loss(d_fake, d_real)
            (loss_real + loss_fake).backward()
            D.optim.step()
        utils.toggle_grad(D, False)
        utils.toggle_grad(G, True)
        G.optim.zero_grad()
        z_.normal_()
        y_.random_(0, ncls)
        g_loss = losses.generator_loss(GD(z_, y_, train_G=True))
        g_loss.backward()
        G.optim.step()
        ema.update(itr)
        return float(g_loss.item()), float(loss_real.item()), float(loss_fake.item())

    for i in range(warm):
        step(i)
    cuda = dev.type == "cuda"
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    out = (0.0, 0.0, 0.0)
    for i in range(iters):
        out = step(warm + i)
    if cuda:
        torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    result = {
        "impl": "reference",
        "config": name,
        "stand_in": bool(getattr(models, "STAND_IN", False)),
        "device": torch.cuda.get_device_name() if cuda else "cpu",
        "torch": torch.__version__,
        "batch": bs,
        "d_steps": d_steps,
        "iters": iters,
        "seconds": round(dt, 3),
        "g_iters_per_s": round(iters / dt, 4),
        "images_per_s": round(iters * bs * d_steps / dt, 1),
        "peak_mem_gb": round(torch.cuda.max_memory_allocated() / 2**30, 2) if cuda else None,
        "g_params": sum(p.numel() for p in G.parameters()),
        "d_params": sum(p.numel() for p in D.parameters()),
        "finite": all(v == v for v in out),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
