"""GPU fast path (compile + CUDA graphs, bf16, channels_last, fused Adam, prefetch); skipped without CUDA."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.workflows.biggan.conftest import events, last, run_workload
from workflows.biggan.config import resolve
from workflows.biggan.data import prefetch
from workflows.biggan.distributed import World
from workflows.biggan.trainer import Trainer

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine"),
]


@pytest.mark.parametrize("compile_", ["auto", "false"])
def test_cuda_fast_paths_train(tmp_path: Path, compile_: str) -> None:
    c = resolve(
        "smoke",
        ["runtime.device=cuda", f"runtime.compile={compile_}", f"runtime.compile_cache_dir={tmp_path / 'cache'}"],
    )
    t = Trainer(c, tmp_path, "smoke", world=World())
    assert t.device.type == "cuda" and t.amp_dtype == torch.bfloat16 and t.channels_last
    assert t.g_opt.defaults.get("fused") is True
    assert not t.deterministic and torch.backends.cudnn.benchmark  # the CUDA default
    if compile_ == "auto":  # on by default on CUDA, CUDA graphs for a model this small
        assert t.compile.enabled, t.compile.warning
        assert t.compile.mode == "reduce-overhead" and t.compile.cache in ("cold", "warm", "partial")
    real = t.batches()
    for _ in range(3):
        t.step(real)
    losses = t.take_losses()
    assert all(isinstance(v, float) for v in losses.values()), losses
    assert next(t.G.parameters()).dtype == torch.float32  # weights stay fp32 under autocast


def test_deterministic_cuda_resume_matches_uninterrupted(tmp_path: Path) -> None:
    job = [
        "runtime.device=cuda",
        "runtime.deterministic=true",
        "train.checkpoint_every=3",
        "train.sample_grid=false",
        f"runtime.compile_cache_dir={tmp_path / 'cache'}",
    ]
    whole = run_workload(tmp_path / "whole", *job, "train.max_iters=6", timeout=900)
    assert whole.returncode == 0, whole.stderr
    first = run_workload(tmp_path / "split", *job, "train.max_iters=3", timeout=900)
    assert first.returncode == 0, first.stderr
    second = run_workload(tmp_path / "split", *job, "train.max_iters=6", timeout=900)
    assert second.returncode == 0, second.stderr
    evts = events(tmp_path / "split")
    assert last(evts, "run_start")["resumed_from"] == "ckpt-00000003.pt"
    assert evts[-1]["g_sha256"] == events(tmp_path / "whole")[-1]["g_sha256"]
    warm = [e for e in evts if e["event"] == "warmup"]
    assert len(warm) == 2 and warm[1]["compile_cache"] in ("warm", "partial", None)  # the cache was kept


def test_prefetch_hands_out_the_same_batches_on_the_gpu() -> None:
    batches = [(torch.randn(4, 3, 8, 8).pin_memory(), torch.arange(4).pin_memory()) for _ in range(3)]
    got = []
    for x, y in prefetch(iter(batches + batches[:1]), torch.device("cuda"), torch.channels_last):
        got.append((x, y))
        if len(got) == 3:
            break
    for (x, y), (ex, ey) in zip(got, batches):
        assert x.is_cuda and x.is_contiguous(memory_format=torch.channels_last)
        assert torch.equal(x.cpu(), ex) and torch.equal(y.cpu(), ey)
