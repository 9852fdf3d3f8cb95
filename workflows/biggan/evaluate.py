"""Optional Inception Score and FID, from Inception-v3 weights the user has on disk.

Nothing is ever downloaded: without `eval.inception_weights`, or without torchvision,
the evaluation is skipped and the training log says why. FID compares generated images
with the same number of real images of the training data set.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import Dataset

MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)


class EvalSkipped(Exception):
    """The evaluation cannot run here; the message says why and how to enable it."""


def _load_inception(path_str: str | None) -> torch.nn.Module:
    if not path_str:
        raise EvalSkipped(
            "no Inception weights given: set eval.inception_weights=PATH to a local "
            "torchvision inception_v3 state_dict file (nothing is downloaded)"
        )
    path = Path(path_str).expanduser()
    if not path.is_file():
        raise EvalSkipped(f"eval.inception_weights {str(path)!r} does not exist")
    try:
        from torchvision.models import inception_v3
    except ImportError:
        raise EvalSkipped(
            "torchvision is not installed (IS/FID use its Inception-v3); install the torchvision "
            "build that matches your torch"
        ) from None
    net = inception_v3(weights=None, aux_logits=True, init_weights=False, transform_input=False)
    try:
        net.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    except Exception as exc:  # wrong file, wrong keys
        raise EvalSkipped(f"eval.inception_weights {str(path)!r} is not an inception_v3 state_dict: {exc}") from exc
    return net.eval()


@torch.no_grad()
def _features(net: torch.nn.Module, images: torch.Tensor, device: torch.device) -> tuple[np.ndarray, np.ndarray]:
    """Pool features (2048) and class probabilities of images in [-1, 1]."""
    pooled: list[torch.Tensor] = []
    hook = net.avgpool.register_forward_hook(lambda _m, _i, out: pooled.append(out.flatten(1)))
    feats, probs = [], []
    try:
        for chunk in images.split(50):
            x = F.interpolate((chunk.float() + 1) / 2, size=(299, 299), mode="bilinear", align_corners=False)
            x = ((x - MEAN) / STD).to(device)
            logits = net(x)
            probs.append(torch.softmax(logits, 1).double().cpu())
            feats.append(pooled.pop().double().cpu())
    finally:
        hook.remove()
    return torch.cat(feats).numpy(), torch.cat(probs).numpy()


def inception_score(probs: np.ndarray, splits: int = 10) -> float:
    scores = []
    for part in np.array_split(probs, min(splits, len(probs))):
        marginal = part.mean(0, keepdims=True)
        kl = (part * (np.log(part + 1e-12) - np.log(marginal + 1e-12))).sum(1).mean()
        scores.append(np.exp(kl))
    return float(np.mean(scores))


def frechet_distance(a: np.ndarray, b: np.ndarray) -> float:
    from scipy import linalg

    mu1, mu2 = a.mean(0), b.mean(0)
    s1, s2 = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    covmean = np.real(linalg.sqrtm(s1 @ s2))
    return float(((mu1 - mu2) ** 2).sum() + np.trace(s1) + np.trace(s2) - 2 * np.trace(covmean))


@torch.no_grad()
def inception_metrics(
    g: torch.nn.Module, dataset: Dataset, c: dict[str, Any], device: torch.device
) -> dict[str, float]:
    net = _load_inception(c["eval.inception_weights"]).to(device)
    n = c["eval.num_samples"]
    gen = torch.Generator().manual_seed(c["train.seed"] + 31_337)
    was_training = g.training
    g.eval()
    fakes = []
    for lo in range(0, n, 50):
        b = min(50, n - lo)
        z = torch.randn(b, g.dim_z, generator=gen).to(device)
        y = torch.randint(c["model.n_classes"], (b,), generator=gen).to(device)
        fakes.append(g(z, y).float().cpu())
    g.train(was_training)
    total = len(dataset)  # type: ignore[arg-type]
    idx = np.linspace(0, total - 1, num=min(n, total)).astype(int)
    reals = torch.stack([dataset[int(i)][0] for i in idx])
    f_fake, p_fake = _features(net, torch.cat(fakes), device)
    f_real, _ = _features(net, reals, device)
    return {"inception_score": inception_score(p_fake), "fid": frechet_distance(f_fake, f_real)}
