"""GPU speed paths (bf16 autocast, channels_last, fused Adam, torch.compile); skipped without CUDA."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from workflows.biggan.config import resolve
from workflows.biggan.distributed import World
from workflows.biggan.trainer import Trainer

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine"),
]


@pytest.mark.parametrize("compile_", [False, True])
def test_cuda_fast_paths_train(tmp_path: Path, compile_: bool) -> None:
    c = resolve("smoke", ["runtime.device=cuda", f"runtime.compile={str(compile_).lower()}"])
    t = Trainer(c, tmp_path, "smoke", world=World())
    assert t.device.type == "cuda" and t.amp_dtype == torch.bfloat16 and t.channels_last
    assert t.g_opt.defaults.get("fused") is True
    real = t.batches()
    for _ in range(3):
        t.step(real)
    losses = t.take_losses()
    assert all(isinstance(v, float) for v in losses.values()), losses
    assert next(t.G.parameters()).dtype == torch.float32  # weights stay fp32 under autocast
