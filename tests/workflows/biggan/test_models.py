"""Model shapes for every architecture and resolution; one real training step of each variant."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from workflows.biggan.config import resolve
from workflows.biggan.distributed import World
from workflows.biggan.layers import SelfAttention, SNLinear
from workflows.biggan.losses import d_hinge, g_hinge, ortho_penalty
from workflows.biggan.models import build_models
from workflows.biggan.trainer import Trainer

TINY = ["model.g_ch=2", "model.d_ch=2", "model.shared_dim=8", "model.n_classes=3"]


@pytest.mark.parametrize("arch", ["biggan", "biggan-deep"])
@pytest.mark.parametrize("res", [32, 64, 128])
def test_shapes_and_attention(arch: str, res: int) -> None:
    c = resolve(
        "smoke", TINY + [f"model.arch={arch}", f"model.resolution={res}", "model.attention=16", "model.dim_z=24"]
    )
    torch.manual_seed(0)
    g, d = build_models(c)
    assert sum(isinstance(m, SelfAttention) for m in g.modules()) == 1
    assert sum(isinstance(m, SelfAttention) for m in d.modules()) == 1
    z, y = torch.randn(2, g.dim_z), torch.tensor([0, 2])
    x = g(z, y)
    assert x.shape == (2, 3, res, res) and x.abs().max() <= 1
    out = d(x, y)
    assert out.shape == (2,) and torch.isfinite(out).all()
    if arch == "biggan":  # hierarchical z: one chunk per G block plus one for the input layer
        assert g.dim_z % g.chunk == 0 and g.dim_z // g.chunk == len(g.blocks)  # blocks incl. attention


def test_reference_model_sizes() -> None:
    """ch 96 BigGAN at 128 px has the paper's order of magnitude (~70M G parameters)."""
    c = resolve("imagenet128")
    with torch.device("meta"):
        g, d = build_models(c)
    n_g = sum(p.numel() for p in g.parameters()) / 1e6
    n_d = sum(p.numel() for p in d.parameters()) / 1e6
    assert 60 < n_g < 80 and 75 < n_d < 95, (n_g, n_d)


def test_spectral_norm_bounds_the_largest_singular_value() -> None:
    torch.manual_seed(0)
    lin = SNLinear(16, 8)
    with torch.no_grad():
        lin.weight.mul_(10)
    for _ in range(30):  # power iterations converge during training forwards
        lin(torch.randn(1, 16))
    sigma = torch.linalg.matrix_norm(lin.sn_weight().detach(), ord=2)
    assert abs(float(sigma) - 1.0) < 1e-2


def test_losses() -> None:
    real, fake = torch.tensor([2.0, 0.5]), torch.tensor([-2.0, 0.0])
    lr, lf = d_hinge(real, fake)
    assert float(lr) == pytest.approx(0.25) and float(lf) == pytest.approx(0.5)
    assert float(g_hinge(fake)) == pytest.approx(1.0)
    ortho = torch.nn.Linear(4, 4, bias=False)
    torch.nn.init.orthogonal_(ortho.weight)
    assert abs(float(ortho_penalty(ortho).detach())) < 1e-5  # orthogonal rows: nothing off the diagonal
    torch.nn.init.constant_(ortho.weight, 1.0)
    assert float(ortho_penalty(ortho).detach()) == pytest.approx(12 * 16)  # off-diagonal of W W^T = 4 each
    torch.manual_seed(0)
    for shape in [(40, 3), (3, 40), (6, 2, 3, 3)]:  # tall, wide, conv: same as the direct formula
        m = torch.nn.Module()
        m.w = torch.nn.Parameter(torch.randn(shape))
        w = m.w.reshape(shape[0], -1)
        direct = ((w @ w.t()) * (1 - torch.eye(shape[0]))).pow(2).sum()
        assert float(ortho_penalty(m).detach()) == pytest.approx(float(direct.detach()), rel=1e-4)


@pytest.mark.parametrize(
    "extra",
    [
        ["model.arch=biggan-deep", "train.accumulate=2", "train.ortho_reg=1e-4", "model.init=ortho"],
        ["train.ema=false", "model.hier=false", "model.init=xavier", "model.attention=0"],
    ],
)
def test_training_steps_update_weights(tmp_path: Path, extra: list[str]) -> None:
    c = resolve("smoke", TINY + ["train.batch_size=4", "train.d_steps=1", "train.ema_start=1"] + extra)
    t = Trainer(c, tmp_path, "smoke", world=World())
    before = t.g_sha256()
    real = t.batches()
    t.step(real)
    t.step(real)
    assert t.iteration == 2 and t.data_position == 2 * c["train.accumulate"]
    assert t.g_sha256() != before
    losses = t.take_losses()
    assert all(isinstance(v, float) for v in losses.values())
    if t.G_ema is not None:
        assert not torch.equal(next(t.G_ema.parameters()), next(t.G.parameters()))  # averaging, not copying
