"""Batched spectral norm computes what the per-layer implementation it replaced computed."""

from __future__ import annotations

import copy
import types

import pytest
import torch
import torch.nn.functional as F

from workflows.biggan.config import resolve
from workflows.biggan.layers import SNLinear, _SpectralNorm
from workflows.biggan.models import build_models


def reference_sn_weight(self: _SpectralNorm) -> torch.Tensor:
    """The per-layer implementation before batching, verbatim (the reference to compare with)."""
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


def per_layer(model: torch.nn.Module) -> torch.nn.Module:
    """A copy of `model` that normalises each layer on its own with the reference code."""
    old = copy.deepcopy(model)
    old._sn_groups = ()
    for m in old.modules():
        if isinstance(m, _SpectralNorm):
            m._normalized_weight = types.MethodType(reference_sn_weight, m)  # type: ignore[method-assign]
    return old


def assert_same(new: torch.Tensor, ref: torch.Tensor, what: str) -> None:
    """Equal up to float32 rounding: batched matrix products sum in another order."""
    new, ref = new.detach(), ref.detach()
    tol = 1e-5 * float(ref.abs().max()) + 1e-5
    assert float((new - ref).abs().max()) <= tol, f"{what}: differs by more than {tol:.2e}"


def _grads(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("arch", ["biggan", "biggan-deep"])
def test_batched_spectral_norm_matches_the_per_layer_reference(arch: str) -> None:
    c = resolve("smoke", [f"model.arch={arch}", "model.g_ch=4", "model.d_ch=4"])
    torch.manual_seed(0)
    g, d = build_models(c)
    assert len(g._sn_groups) < sum(isinstance(m, _SpectralNorm) for m in g.modules())  # layers were batched
    g_old, d_old = per_layer(g), per_layer(d)
    gen = torch.Generator().manual_seed(1)
    for _ in range(3):  # train mode: u advances one power iteration per forward
        z = torch.randn(4, g.dim_z, generator=gen)
        y = torch.randint(c["model.n_classes"], (4,), generator=gen)
        outs = []
        for gm, dm in ((g, d), (g_old, d_old)):
            gm.zero_grad(set_to_none=True)
            dm.zero_grad(set_to_none=True)
            out = dm(gm(z, y), y)
            out.sum().backward()
            outs.append(out.detach())
        assert_same(outs[0], outs[1], "D(G(z))")
        for new, old in ((g, g_old), (d, d_old)):
            gn, go = _grads(new), _grads(old)
            assert gn.keys() == go.keys()
            for k in gn:
                assert_same(gn[k], go[k], f"grad {k}")
            for (k, b), (_, b_old) in zip(new.named_buffers(), old.named_buffers()):
                assert_same(b.float(), b_old.float(), k)
    g.eval()
    g_old.eval()  # eval (G_ema): no power iteration, the stored u is used as it is
    before = {k: b.clone() for k, b in g.named_buffers()}
    with torch.no_grad():
        assert_same(g(z, y), g_old(z, y), "eval forward")
    assert all(torch.equal(b, before[k]) for k, b in g.named_buffers())


def test_a_layer_on_its_own_uses_the_same_math() -> None:
    torch.manual_seed(0)
    lin = SNLinear(16, 8)
    ref = copy.deepcopy(lin)
    assert_same(lin.sn_weight(), reference_sn_weight(ref), "weight")
    assert_same(lin.sn_u, ref.sn_u, "u")
    assert lin._sn_w is None  # nothing cached outside a model's forward


def test_normalised_weights_are_released_after_the_forward() -> None:
    c = resolve("smoke")
    g, _ = build_models(c)
    g(torch.randn(2, g.dim_z), torch.tensor([0, 1]))
    assert all(layer._sn_w is None for group in g._sn_groups for layer in group)
