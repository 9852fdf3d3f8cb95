"""Hinge loss (Lim & Ye 2017; Miyato et al. 2018) and BigGAN's orthogonal regularisation."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def d_hinge(real_logits: torch.Tensor, fake_logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """D's two loss terms, kept apart because the training log reports both."""
    return F.relu(1.0 - real_logits).mean(), F.relu(1.0 + fake_logits).mean()


def g_hinge(fake_logits: torch.Tensor) -> torch.Tensor:
    return -fake_logits.mean()


def ortho_penalty(model: nn.Module, skip: tuple[nn.Parameter, ...] = ()) -> torch.Tensor:
    """Sum of ||W W^T * (1 - I)||_F^2 over G's matrices (BigGAN's off-diagonal variant).

    Only the off-diagonal is penalised, so filters are pushed apart without fixing their
    norm. Computed as ||W^T W||_F^2 - sum_i ||w_i||^4 with the smaller of the two Gram
    matrices: G's input layer is 24576 x 20 at 128 px, whose W W^T alone would take 2.4 GB.
    """
    skip_ids = {id(p) for p in skip}
    total = torch.zeros((), device=next(model.parameters()).device)
    for p in model.parameters():
        if p.ndim < 2 or id(p) in skip_ids:
            continue
        w = p.reshape(p.shape[0], -1).float()
        gram = w.t() @ w if w.shape[0] > w.shape[1] else w @ w.t()
        total = total + gram.pow(2).sum() - w.pow(2).sum(1).pow(2).sum()
    return total
