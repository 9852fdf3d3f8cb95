"""Building blocks: spectrally normalised layers, conditional BatchNorm, self-attention.

Spectral norm is our own (one power iteration per training forward, u kept as a buffer)
so that the state dict is plain tensors and a resumed run continues the same iteration.
A model normalises all its layers at once (`SpectralNormModel`): a Python loop over
layers costs more than the GPU work of small models.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


class _SpectralNorm:
    """Mixin: divide the weight by its largest singular value, estimated by power iteration.

    Inside a model that derives from `SpectralNormModel` the model computes every layer's
    normalised weight at the start of its forward, one batch per weight shape, and the
    layer reads it from `_sn_w`; called on its own, a layer normalises its weight alone.
    """

    weight: torch.Tensor
    sn_eps: float
    _sn_w: torch.Tensor | None

    def _init_sn(self, eps: float) -> None:
        self.sn_eps = eps
        self._sn_w = None
        rows = self.weight.shape[0]
        u = torch.randn(1, rows)
        self.register_buffer("sn_u", F.normalize(u, dim=1, eps=eps))  # type: ignore[attr-defined]

    def sn_weight(self) -> torch.Tensor:
        return spectral_normalize([self], self.sn_eps, self.training)[0]  # type: ignore[attr-defined]

    def _normalized_weight(self) -> torch.Tensor:
        return self._sn_w if self._sn_w is not None else self.sn_weight()


def spectral_normalize(layers: list[_SpectralNorm], eps: float, training: bool) -> list[torch.Tensor]:
    """W / sigma(W) for layers whose weights share one shape, as one batch of matrices.

    Per layer the math is the classic one (Miyato et al. 2018), unchanged from a
    per-layer loop: in training one power iteration updates u (no gradient), then
    v = normalize(u W) and sigma = u W v^T, with the gradient flowing through v and
    sigma. Batching turns ~20 small operators per layer into ~20 per weight shape, with no
    host synchronisation, so it also suits CUDA graphs.
    """
    w = torch.stack([layer.weight for layer in layers])
    n, rows = w.shape[0], w.shape[1]
    device = w.device.type
    # the layers' own dtype under autocast: dividing straight into it saves the fp32 copy of
    # every normalised weight that autocast would otherwise cast again in each conv
    out_dtype = torch.get_autocast_dtype(device) if device != "meta" and torch.is_autocast_enabled(device) else w.dtype
    with torch.autocast(device_type=device, enabled=False) if device != "meta" else nullcontext():
        mats = w.float().reshape(n, rows, -1)
        u = torch.stack([layer.sn_u for layer in layers])  # type: ignore[attr-defined]
        if training:
            with torch.no_grad():
                v = F.normalize(torch.bmm(u, mats), dim=2, eps=eps)
                u = F.normalize(torch.bmm(v, mats.transpose(1, 2)), dim=2, eps=eps)
                torch._foreach_copy_([layer.sn_u for layer in layers], list(u.unbind(0)))  # type: ignore[attr-defined]
        v = F.normalize(torch.bmm(u, mats), dim=2, eps=eps)
        sigma = torch.bmm(torch.bmm(u, mats), v.transpose(1, 2))  # (n, 1, 1)
    return list((w / sigma.view(n, *([1] * (w.dim() - 1)))).to(out_dtype).unbind(0))


class SpectralNormModel(nn.Module):
    """A model whose spectrally normalised layers are normalised together, once per forward.

    Subclasses call `_sn_setup()` at the end of `__init__` and implement `_forward`. The
    groups are fixed at construction (layers with equal weight shape and eps); a deep
    copy (G_ema) keeps its own layers in them.
    """

    _sn_groups: tuple[tuple[_SpectralNorm, ...], ...]

    def _sn_setup(self) -> None:
        groups: dict[tuple[Any, ...], list[_SpectralNorm]] = {}
        for m in self.modules():
            if isinstance(m, _SpectralNorm):
                groups.setdefault((tuple(m.weight.shape), m.sn_eps), []).append(m)
        self._sn_groups = tuple(tuple(g) for g in groups.values())

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        for group in self._sn_groups:
            for layer, w in zip(group, spectral_normalize(list(group), group[0].sn_eps, self.training)):
                layer._sn_w = w
        try:
            return self._forward(*args)
        finally:
            for group in self._sn_groups:
                for layer in group:
                    layer._sn_w = None

    def _forward(self, *args: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError


class SNConv2d(nn.Conv2d, _SpectralNorm):
    def __init__(
        self, cin: int, cout: int, kernel: int = 3, padding: int | None = None, bias: bool = True, eps: float = 1e-6
    ) -> None:
        super().__init__(cin, cout, kernel, padding=kernel // 2 if padding is None else padding, bias=bias)
        self._init_sn(eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._conv_forward(x, self._normalized_weight(), self.bias)


class SNLinear(nn.Linear, _SpectralNorm):
    def __init__(self, cin: int, cout: int, bias: bool = True, eps: float = 1e-6) -> None:
        super().__init__(cin, cout, bias=bias)
        self._init_sn(eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self._normalized_weight(), self.bias)


class SNEmbedding(nn.Embedding, _SpectralNorm):
    """Class embedding of the D projection head, spectrally normalised like BigGAN's."""

    def __init__(self, n: int, dim: int, eps: float = 1e-6) -> None:
        super().__init__(n, dim)
        self._init_sn(eps)

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        # fp32 rows under autocast too: the projection term sums over all of D's channels
        return F.embedding(y, self._normalized_weight()).float()


class ConditionalBN(nn.Module):
    """BatchNorm whose gain and bias are linear functions of the conditioning vector.

    The conditioning vector is the shared class embedding (plus a chunk of z with `hier`),
    so one embedding table serves every block of G.
    """

    def __init__(self, channels: int, cond_dim: int, eps: float = 1e-5, sn_eps: float = 1e-6) -> None:
        super().__init__()
        self.bn = nn.BatchNorm2d(channels, affine=False, eps=eps)
        self.gain = SNLinear(cond_dim, channels, bias=False, eps=sn_eps)
        self.bias = SNLinear(cond_dim, channels, bias=False, eps=sn_eps)

    def forward(self, x: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        gain = (1 + self.gain(cond)).view(cond.shape[0], -1, 1, 1)
        bias = self.bias(cond).view(cond.shape[0], -1, 1, 1)
        return self.bn(x) * gain + bias


class SelfAttention(nn.Module):
    """SAGAN self-attention with pooled keys/values; starts as identity (gamma = 0)."""

    def __init__(self, ch: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.theta = SNConv2d(ch, max(ch // 8, 1), 1, bias=False, eps=eps)
        self.phi = SNConv2d(ch, max(ch // 8, 1), 1, bias=False, eps=eps)
        self.g = SNConv2d(ch, max(ch // 2, 1), 1, bias=False, eps=eps)
        self.o = SNConv2d(max(ch // 2, 1), ch, 1, bias=False, eps=eps)
        self.gamma = nn.Parameter(torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, h, w = x.shape
        # (b, 1 head, positions, channels): SAGAN's softmax(theta^T phi) g^T, unscaled, as one
        # fused kernel (flash / memory-efficient on CUDA) that never stores the hw x hw/4 matrix
        q = self.theta(x).flatten(2).transpose(1, 2).unsqueeze(1)  # b, 1, hw, c/8
        k = F.max_pool2d(self.phi(x), 2).flatten(2).transpose(1, 2).unsqueeze(1)  # b, 1, hw/4, c/8
        v = F.max_pool2d(self.g(x), 2).flatten(2).transpose(1, 2).unsqueeze(1)  # b, 1, hw/4, c/2
        out = F.scaled_dot_product_attention(q, k, v, scale=1.0)  # b, 1, hw, c/2
        out = out.squeeze(1).transpose(1, 2).reshape(b, -1, h, w)
        return x + self.gamma * self.o(out)


def init_weights(module: nn.Module, scheme: str) -> None:
    """BigGAN's inits: N(0, 0.02) ('N02'), orthogonal ('ortho') or Xavier uniform."""
    for m in module.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear, nn.Embedding)):
            if scheme == "ortho":
                nn.init.orthogonal_(m.weight)
            elif scheme == "N02":
                nn.init.normal_(m.weight, 0.0, 0.02)
            else:
                nn.init.xavier_uniform_(m.weight)
