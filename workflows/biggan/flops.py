"""Model FLOPs of one G iteration, counted once at start with torch's own FLOP counter.

MFU (model FLOPs utilisation, as in MLPerf's and PaLM's appendices) is achieved model
FLOP/s over the hardware's peak: the FLOPs a G iteration needs, whatever the
implementation does (recomputation, padding, autotuned kernels do not count). They are
counted with `torch.utils.flop_counter.FlopCounterMode` (matmuls, convolutions,
attention; elementwise work is not a FLOP there, as in MLPerf) on the run's real config,
global batch included, on the `meta` device: shapes only, no memory, milliseconds.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode

from workflows.biggan.losses import d_hinge, g_hinge, ortho_penalty
from workflows.biggan.models import build_models


def images_per_g_iteration(c: dict[str, Any]) -> int:
    """Real images one G iteration consumes (the unit of images/s): batch x D steps x accumulations."""
    return c["train.batch_size"] * c["train.d_steps"] * c["train.accumulate"]


def flops_per_g_iteration(c: dict[str, Any]) -> int:
    """FLOPs of `d_steps` x `accumulate` D micro-steps + `accumulate` G micro-steps (+ ortho reg)."""
    b, res = c["train.batch_size"], c["model.resolution"]
    with torch.device("meta"):
        g, d = build_models(c)
        z = torch.randn(b, g.dim_z)
        y = torch.randint(c["model.n_classes"], (b,))
        x = torch.randn(b, 3, res, res)
    g.train()
    d.train()
    with FlopCounterMode(display=False) as d_count:
        with torch.no_grad():
            fake = g(z, y)
        real_l, fake_l = d_hinge(*d(torch.cat([x, fake]), torch.cat([y, y])).split(b))
        (real_l + fake_l).backward()
    d.requires_grad_(False)
    with FlopCounterMode(display=False) as g_count:
        g_hinge(d(g(z, y), y)).backward()
    reg = 0
    if c["train.ortho_reg"] > 0:
        with FlopCounterMode(display=False) as reg_count:
            ortho_penalty(g, skip=(g.shared.weight,)).backward()
        reg = reg_count.get_total_flops()
    acc = c["train.accumulate"]
    return int(d_count.get_total_flops() * c["train.d_steps"] * acc + g_count.get_total_flops() * acc + reg)


def flops_or_none(c: dict[str, Any]) -> int | None:
    """`flops_per_g_iteration`, or None if counting fails: a missing figure never costs the run."""
    try:
        return flops_per_g_iteration(c)
    except Exception:  # an operator without a meta kernel in some torch version: MFU is then unknown
        return None
