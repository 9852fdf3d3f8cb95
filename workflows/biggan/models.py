"""BigGAN and BigGAN-deep generators and discriminators for 32, 64 and 128 pixels.

Channel widths are multiples of `g_ch` / `d_ch` per resolution stage (Brock et al. 2019,
appendix B). G: shared class embedding + (hierarchical) z feed conditional BatchNorm in
every block. D: residual blocks, global sum pooling, linear output + class projection.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from workflows.biggan.layers import (
    ConditionalBN,
    SelfAttention,
    SNConv2d,
    SNEmbedding,
    SNLinear,
    SpectralNormModel,
    init_weights,
)

# resolution -> (input multipliers, output multipliers) of G's upsampling stages (from 4x4)
G_STAGES = {32: ([4, 4, 4], [4, 4, 4]), 64: ([16, 16, 8, 4], [16, 8, 4, 2]), 128: ([16, 16, 8, 4, 2], [16, 8, 4, 2, 1])}
# resolution -> (output multipliers, downsample?) of D's stages (input: the image)
D_STAGES = {
    32: ([4, 4, 4, 4], [True, True, False, False]),
    64: ([1, 2, 4, 8, 16], [True, True, True, True, False]),
    128: ([1, 2, 4, 8, 16, 16], [True, True, True, True, True, False]),
}
# BigGAN-deep D: an input conv to the first width, then stages (in, out, downsample?)
D_DEEP_STAGES = {
    32: ([4, 4, 4], [4, 4, 4], [True, True, False]),
    64: ([1, 2, 4, 8], [2, 4, 8, 16], [True, True, True, True]),
    128: ([1, 2, 4, 8, 16], [2, 4, 8, 16, 16], [True, True, True, True, True]),
}


class GBlock(nn.Module):
    """BigGAN up-block: CBN-ReLU-up-conv3-CBN-ReLU-conv3, skip: up-conv1."""

    def __init__(self, cin: int, cout: int, cond_dim: int, bn_eps: float, sn_eps: float) -> None:
        super().__init__()
        self.bn1 = ConditionalBN(cin, cond_dim, bn_eps, sn_eps)
        self.conv1 = SNConv2d(cin, cout, 3, eps=sn_eps)
        self.bn2 = ConditionalBN(cout, cond_dim, bn_eps, sn_eps)
        self.conv2 = SNConv2d(cout, cout, 3, eps=sn_eps)
        self.skip = SNConv2d(cin, cout, 1, eps=sn_eps)

    def forward(self, x: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        h = F.interpolate(F.relu(self.bn1(x, cond)), scale_factor=2.0, mode="nearest")
        h = self.conv2(F.relu(self.bn2(self.conv1(h), cond)))
        return h + self.skip(F.interpolate(x, scale_factor=2.0, mode="nearest"))


class DeepGBlock(nn.Module):
    """BigGAN-deep bottleneck block; the skip drops channels instead of a 1x1 conv."""

    def __init__(self, cin: int, cout: int, cond_dim: int, upsample: bool, bn_eps: float, sn_eps: float) -> None:
        super().__init__()
        hid = max(cin // 4, 1)
        self.upsample, self.cout = upsample, cout
        self.bn1, self.conv1 = ConditionalBN(cin, cond_dim, bn_eps, sn_eps), SNConv2d(cin, hid, 1, eps=sn_eps)
        self.bn2, self.conv2 = ConditionalBN(hid, cond_dim, bn_eps, sn_eps), SNConv2d(hid, hid, 3, eps=sn_eps)
        self.bn3, self.conv3 = ConditionalBN(hid, cond_dim, bn_eps, sn_eps), SNConv2d(hid, hid, 3, eps=sn_eps)
        self.bn4, self.conv4 = ConditionalBN(hid, cond_dim, bn_eps, sn_eps), SNConv2d(hid, cout, 1, eps=sn_eps)

    def forward(self, x: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        h = self.conv1(F.relu(self.bn1(x, cond)))
        h = F.relu(self.bn2(h, cond))
        skip = x[:, : self.cout]
        if self.upsample:
            h = F.interpolate(h, scale_factor=2.0, mode="nearest")
            skip = F.interpolate(skip, scale_factor=2.0, mode="nearest")
        h = self.conv2(h)
        h = self.conv3(F.relu(self.bn3(h, cond)))
        h = self.conv4(F.relu(self.bn4(h, cond)))
        return h + skip


class Generator(SpectralNormModel):
    def __init__(self, c: dict[str, Any]) -> None:
        super().__init__()
        res, ch, eps, sn = c["model.resolution"], c["model.g_ch"], c["model.bn_eps"], c["model.sn_eps"]
        self.deep = c["model.arch"] == "biggan-deep"
        ins, outs = G_STAGES[res]
        shared_dim = c["model.shared_dim"]
        self.shared = nn.Embedding(c["model.n_classes"], shared_dim)
        self.hier = c["model.hier"] and not self.deep
        if self.hier:
            self.chunk = c["model.dim_z"] // (len(ins) + 1)
            self.dim_z = self.chunk * (len(ins) + 1)
            cond_dim, in_dim = shared_dim + self.chunk, self.chunk
        elif self.deep:  # BigGAN-deep: the whole z with the embedding, everywhere
            self.dim_z = c["model.dim_z"]
            cond_dim = in_dim = shared_dim + self.dim_z
        else:
            self.dim_z = c["model.dim_z"]
            cond_dim, in_dim = shared_dim, self.dim_z
        self.bottom = ch * ins[0]
        self.linear = SNLinear(in_dim, self.bottom * 16, eps=sn)
        blocks: list[nn.Module] = []
        side = 4
        for cin, cout in zip(ins, outs):
            if self.deep:
                depth = c["model.depth"]
                for i in range(depth):
                    last = i == depth - 1
                    blocks.append(DeepGBlock(ch * cin, ch * (cout if last else cin), cond_dim, last, eps, sn))
            else:
                blocks.append(GBlock(ch * cin, ch * cout, cond_dim, eps, sn))
            side *= 2
            if side == c["model.attention"]:
                blocks.append(SelfAttention(ch * cout, sn))
        self.blocks = nn.ModuleList(blocks)
        self.out_bn = nn.BatchNorm2d(ch * outs[-1], eps=eps)
        self.out_conv = SNConv2d(ch * outs[-1], 3, 3, eps=sn)
        init_weights(self, c["model.init"])
        self._sn_setup()

    def _forward(self, z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        emb = self.shared(y)
        if self.hier:
            chunks = z.split(self.chunk, dim=1)
            h, conds = self.linear(chunks[0]), [torch.cat([emb, zc], 1) for zc in chunks[1:]]
        else:
            cond = torch.cat([emb, z], 1) if self.deep else emb
            h, conds = self.linear(cond if self.deep else z), None
        h = h.view(z.shape[0], self.bottom, 4, 4)
        i = 0
        for block in self.blocks:
            if isinstance(block, SelfAttention):
                h = block(h)
                continue
            h = block(h, conds[min(i, len(conds) - 1)] if conds else cond)
            i += 1
        return torch.tanh(self.out_conv(F.relu(self.out_bn(h))))


class DBlock(nn.Module):
    """BigGAN down-block: (ReLU)-conv3-ReLU-conv3-pool, skip: conv1 and pool."""

    def __init__(self, cin: int, cout: int, preact: bool, downsample: bool, sn_eps: float) -> None:
        super().__init__()
        self.preact, self.downsample = preact, downsample
        self.conv1 = SNConv2d(cin, cout, 3, eps=sn_eps)
        self.conv2 = SNConv2d(cout, cout, 3, eps=sn_eps)
        self.skip = SNConv2d(cin, cout, 1, eps=sn_eps) if (cin != cout or downsample) else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(x) if self.preact else x
        h = self.conv2(F.relu(self.conv1(h)))
        if self.downsample:
            h = F.avg_pool2d(h, 2)
        s = x
        if self.skip is not None:
            if self.preact:
                s = self.skip(s)
                s = F.avg_pool2d(s, 2) if self.downsample else s
            else:
                s = self.skip(F.avg_pool2d(s, 2) if self.downsample else s)
        return h + s


class DeepDBlock(nn.Module):
    """BigGAN-deep bottleneck down-block; the skip concatenates new channels."""

    def __init__(self, cin: int, cout: int, downsample: bool, sn_eps: float) -> None:
        super().__init__()
        hid = max(cout // 4, 1)
        self.downsample, self.cin, self.cout = downsample, cin, cout
        self.conv1 = SNConv2d(cin, hid, 1, eps=sn_eps)
        self.conv2 = SNConv2d(hid, hid, 3, eps=sn_eps)
        self.conv3 = SNConv2d(hid, hid, 3, eps=sn_eps)
        self.conv4 = SNConv2d(hid, cout, 1, eps=sn_eps)
        self.extra = SNConv2d(cin, cout - cin, 1, eps=sn_eps) if cout > cin else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv1(F.relu(x))
        h = self.conv3(F.relu(self.conv2(F.relu(h))))
        h = F.relu(h)
        s = x
        if self.downsample:
            h, s = F.avg_pool2d(h, 2), F.avg_pool2d(s, 2)
        h = self.conv4(h)
        if self.extra is not None:
            s = torch.cat([s, self.extra(s)], 1)
        return h + s[:, : self.cout]


class Discriminator(SpectralNormModel):
    def __init__(self, c: dict[str, Any]) -> None:
        super().__init__()
        res, ch, sn = c["model.resolution"], c["model.d_ch"], c["model.sn_eps"]
        blocks: list[nn.Module] = []
        side = res
        if c["model.arch"] == "biggan-deep":
            ins, outs, downs = D_DEEP_STAGES[res]
            self.stem: nn.Module | None = SNConv2d(3, ch * ins[0], 3, eps=sn)
            for cin, cout, down in zip(ins, outs, downs):
                for i in range(c["model.depth"]):
                    blocks.append(DeepDBlock(ch * (cin if i == 0 else cout), ch * cout, down and i == 0, sn))
                side //= 2 if down else 1
                if side == c["model.attention"]:
                    blocks.append(SelfAttention(ch * cout, sn))
        else:
            self.stem = None
            outs, downs = D_STAGES[res]
            cin = 3
            for i, (m, down) in enumerate(zip(outs, downs)):
                blocks.append(DBlock(cin, ch * m, preact=i > 0, downsample=down, sn_eps=sn))
                cin = ch * m
                side //= 2 if down else 1
                if side == c["model.attention"]:
                    blocks.append(SelfAttention(ch * m, sn))
        self.blocks = nn.Sequential(*blocks)
        self.out = SNLinear(ch * outs[-1], 1, eps=sn)
        self.embed = SNEmbedding(c["model.n_classes"], ch * outs[-1], eps=sn)
        init_weights(self, c["model.init"])
        self._sn_setup()

    def _forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.stem(x) if self.stem is not None else x
        h = F.relu(self.blocks(h)).sum(dim=(2, 3))
        return self.out(h).squeeze(1) + (self.embed(y) * h).sum(1)


def build_models(c: dict[str, Any]) -> tuple[Generator, Discriminator]:
    """G and D from a resolved config; weights drawn from the global torch RNG (seed first)."""
    return Generator(c), Discriminator(c)
