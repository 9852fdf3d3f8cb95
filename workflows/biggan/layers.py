"""Building blocks: spectrally normalised layers, conditional BatchNorm, self-attention.

Spectral norm is our own (one power iteration per training forward, u kept as a buffer)
so that the state dict is plain tensors and a resumed run continues the same iteration.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class _SpectralNorm:
    """Mixin: divide the weight by its largest singular value, estimated by power iteration."""

    weight: torch.Tensor
    sn_eps: float

    def _init_sn(self, eps: float) -> None:
        self.sn_eps = eps
        rows = self.weight.shape[0]
        u = torch.randn(1, rows)
        self.register_buffer("sn_u", F.normalize(u, dim=1, eps=eps))  # type: ignore[attr-defined]

    def sn_weight(self) -> torch.Tensor:
        w = self.weight
        with torch.autocast(device_type=w.device.type, enabled=False):
            w_mat = w.float().reshape(w.shape[0], -1)
            u = self.sn_u
            if self.training:  # type: ignore[attr-defined]
                with torch.no_grad():
                    v = F.normalize(u @ w_mat, dim=1, eps=self.sn_eps)
                    u = F.normalize(v @ w_mat.t(), dim=1, eps=self.sn_eps)
                    self.sn_u.copy_(u)
            v = F.normalize(u @ w_mat, dim=1, eps=self.sn_eps)
            sigma = (u @ w_mat @ v.t()).squeeze()
        return w / sigma.to(w.dtype)


class SNConv2d(nn.Conv2d, _SpectralNorm):
    def __init__(
        self, cin: int, cout: int, kernel: int = 3, padding: int | None = None, bias: bool = True, eps: float = 1e-6
    ) -> None:
        super().__init__(cin, cout, kernel, padding=kernel // 2 if padding is None else padding, bias=bias)
        self._init_sn(eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._conv_forward(x, self.sn_weight(), self.bias)


class SNLinear(nn.Linear, _SpectralNorm):
    def __init__(self, cin: int, cout: int, bias: bool = True, eps: float = 1e-6) -> None:
        super().__init__(cin, cout, bias=bias)
        self._init_sn(eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.sn_weight(), self.bias)


class SNEmbedding(nn.Embedding, _SpectralNorm):
    """Class embedding of the D projection head, spectrally normalised like BigGAN's."""

    def __init__(self, n: int, dim: int, eps: float = 1e-6) -> None:
        super().__init__(n, dim)
        self._init_sn(eps)

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return F.embedding(y, self.sn_weight())


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
        theta = self.theta(x).flatten(2)  # b, c/8, hw
        phi = F.max_pool2d(self.phi(x), 2).flatten(2)  # b, c/8, hw/4
        g = F.max_pool2d(self.g(x), 2).flatten(2)  # b, c/2, hw/4
        attn = torch.softmax(theta.transpose(1, 2) @ phi, dim=-1)  # b, hw, hw/4
        out = (g @ attn.transpose(1, 2)).view(b, -1, h, w)
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
