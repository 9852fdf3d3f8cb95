"""GPU-side changes checked on the CPU: fused attention, FLOPs, accumulation under CUDA graphs."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from workflows.biggan import runtime
from workflows.biggan.config import resolve
from workflows.biggan.distributed import World
from workflows.biggan.flops import flops_per_g_iteration, images_per_g_iteration
from workflows.biggan.layers import SelfAttention
from workflows.biggan.trainer import Trainer


def _sagan_reference(m: SelfAttention, x: torch.Tensor) -> torch.Tensor:
    """The attention as it was written before scaled_dot_product_attention: the full matrix, then softmax."""
    b, c, h, w = x.shape
    theta = m.theta(x).flatten(2)
    phi = torch.nn.functional.max_pool2d(m.phi(x), 2).flatten(2)
    g = torch.nn.functional.max_pool2d(m.g(x), 2).flatten(2)
    attn = torch.softmax(theta.transpose(1, 2) @ phi, dim=-1)
    return x + m.gamma * m.o((g @ attn.transpose(1, 2)).view(b, -1, h, w))


def test_fused_attention_matches_the_explicit_matrix_forward_and_backward() -> None:
    torch.manual_seed(0)
    m = SelfAttention(16).eval()
    with torch.no_grad():
        m.gamma.fill_(0.7)  # the block is identity at init: make it count
    x = torch.randn(3, 16, 8, 8, requires_grad=True)
    fused = m(x)
    (g_fused,) = torch.autograd.grad(fused.square().sum(), [x])
    ref = _sagan_reference(m, x)
    (g_ref,) = torch.autograd.grad(ref.square().sum(), [x])
    torch.testing.assert_close(fused, ref, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(g_fused, g_ref, rtol=1e-4, atol=1e-4)
    assert not torch.equal(fused, x)


@pytest.mark.slow
def test_flops_per_g_iteration_count_every_micro_step() -> None:
    base = ["train.ortho_reg=0"]
    one = flops_per_g_iteration(resolve("cifar", [*base, "train.d_steps=1"]))
    four = flops_per_g_iteration(resolve("cifar", base))  # 4 D steps
    acc = flops_per_g_iteration(resolve("cifar", [*base, "train.accumulate=2"]))
    assert one > 1e9 and four > 2 * one and acc == 2 * four
    # D's micro-steps (G forward, D forward + backward on 2 batches) cost more than G's own step
    d_part = (four - one) / 3
    assert one - d_part > 0 and d_part > (one - d_part) / 2
    assert flops_per_g_iteration(resolve("imagenet128", ["train.ortho_reg=1e-4"])) > flops_per_g_iteration(
        resolve("imagenet128", ["train.ortho_reg=0"])
    )
    assert images_per_g_iteration(resolve("cifar")) == 50 * 4


@pytest.mark.parametrize("accumulate", [1, 3])
def test_accumulated_gradients_survive_the_cuda_graph_freed_output_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, accumulate: int
) -> None:
    """CPU reproduction of torch's cudagraph_trees rule: a marked step frees every earlier output.

    Under CUDA graphs (compile's reduce-overhead mode, which `auto` picks on CUDA for small
    models) gradients are graph outputs; `cudagraph_mark_step_begin` hands their memory
    to the next replay. The double overwrites every live gradient with NaN at each mark,
    as the next replay would. A gradient still being accumulated into then turns NaN.
    """
    c = resolve("smoke", ["runtime.device=cpu", "train.ema_start=1", f"train.accumulate={accumulate}"])
    t = Trainer(c, tmp_path, "smoke", world=World())
    n = sum(p.numel() for p in t.g_params + t.d_params)
    t.compile.enabled, t.compile.mode = True, runtime.compile_mode(c, n, cuda=True)  # what CUDA would run

    def freed_by_next_replay() -> None:
        for p in t.g_params + t.d_params:
            if p.grad is not None:
                p.grad.fill_(float("nan"))

    monkeypatch.setattr(torch.compiler, "cudagraph_mark_step_begin", freed_by_next_replay)
    real = t.batches()
    t.step(real)
    t.step(real)
    bad = [name for name, p in [*t.G.named_parameters(), *t.D.named_parameters()] if not p.isfinite().all()]
    assert not bad, f"{len(bad)} parameter(s) read freed gradients (first: {bad[0]})"


def test_normalised_weights_are_made_in_the_autocast_dtype_once() -> None:
    """Under autocast the division writes bf16 straight away: no fp32 copy per layer per forward to cast again."""
    from workflows.biggan.layers import SNConv2d, spectral_normalize

    torch.manual_seed(0)
    layers = [SNConv2d(4, 8, 3), SNConv2d(4, 8, 3)]
    with torch.no_grad():
        fp32 = spectral_normalize(layers, 1e-6, training=False)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            low = spectral_normalize(layers, 1e-6, training=False)
    assert all(w.dtype == torch.float32 for w in fp32) and all(w.dtype == torch.bfloat16 for w in low)
    for a, b in zip(fp32, low):
        torch.testing.assert_close(b.float(), a, rtol=1e-2, atol=1e-3)
