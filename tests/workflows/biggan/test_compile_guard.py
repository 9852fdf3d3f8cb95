"""The compiled path proves itself: a wrong backend falls back, graph breaks and recompiles are counted.

Dynamo's own backends (`eager`: tracing only) keep these cheap: graph breaks and
recompiles are decided by dynamo's tracing and guards, before any backend compiles, so
they are the counts inductor sees too. Tiny widths via config overrides.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from workflows.biggan import runtime
from workflows.biggan.config import resolve
from workflows.biggan.distributed import World
from workflows.biggan.trainer import Trainer

TINY = [
    "runtime.device=cpu",
    "model.g_ch=2",
    "model.d_ch=2",
    "model.n_classes=3",
    "train.batch_size=2",
    "data.synthetic_size=16",
    "data.workers=0",
    "train.ema_start=1",
]


def _trainer(tmp_path: Path, experiment: str, *overrides: str) -> Trainer:
    c = resolve(experiment, [*TINY, f"runtime.compile_cache_dir={tmp_path / 'cache'}", *overrides])
    return Trainer(c, tmp_path / "run", experiment, world=World())


@pytest.fixture
def wrong_backend() -> str:
    """A backend that runs the traced graph and returns every float output times 1.5."""
    import torch._dynamo

    def backend(gm: torch.fx.GraphModule, example_inputs: list) -> object:
        def run(*args: object) -> object:
            out = gm(*args)
            scale = lambda t: t * 1.5 if isinstance(t, torch.Tensor) and t.is_floating_point() else t  # noqa: E731
            return type(out)(scale(t) for t in out) if isinstance(out, (list, tuple)) else scale(out)

        return run

    torch._dynamo.reset()
    torch._dynamo.register_backend(backend, name="atlas_test_wrong")
    yield "atlas_test_wrong"
    torch._dynamo.reset()


@pytest.mark.slow
def test_a_backend_with_wrong_numbers_is_refused_and_training_goes_on_eagerly(
    tmp_path: Path, wrong_backend: str
) -> None:
    t = _trainer(tmp_path, "smoke", "runtime.compile=true", f"runtime.compile_backend={wrong_backend}")
    assert t.compile.enabled and t.G_fwd is not t.G  # it compiled: only the guard can tell
    before = t.g_sha256()
    real = t.guard_compile(t.batches())
    assert not t.compile.enabled and t.G_fwd is t.G and t.D_fwd is t.D
    assert t.compile.guard.startswith("D step loss differs") and "tolerance" in t.compile.guard
    assert "compile guard failed" in t.compile.warning and "eager" in t.compile.warning
    assert t.g_sha256() == before and t.data_position == 0  # state untouched, the batch put back
    rec = t.compile.record()
    assert rec["compile"] is False and rec["compile_requested"] is True and rec["compile_guard"] == t.compile.guard
    t.step(real)
    assert t.data_position == t.c["train.d_steps"]


@pytest.mark.slow
@pytest.mark.parametrize("experiment", ["cifar", "imagenet128", "imagenet128-deep"])
def test_every_preset_compiles_without_graph_breaks_or_recompiles(tmp_path: Path, experiment: str) -> None:
    import torch._dynamo

    torch._dynamo.reset()
    from torch._dynamo.utils import counters

    counters.clear()
    t = _trainer(
        tmp_path,
        experiment,
        "runtime.compile=true",
        "runtime.compile_backend=eager",
        "train.accumulate=2",
        "train.d_steps=1",
    )
    assert t.compile.enabled, t.compile.warning
    real = t.guard_compile(t.batches())
    assert t.compile.guard == "passed"
    for _ in range(2):
        t.step(real)
    rec = t.compile.record()
    assert rec["graph_breaks"] == 0, dict(counters["graph_break"])
    assert rec["recompiles"] is not None and rec["recompiles"] <= 2  # at most one per compiled model
    torch._dynamo.reset()


@pytest.mark.slow
def test_a_corrupt_compiler_cache_is_moved_aside_and_rebuilt(tmp_path: Path) -> None:
    """A backend that fails while the cache folder holds a bad entry: the folder moves, the compile is redone."""
    import os

    import torch._dynamo

    def backend(gm: torch.fx.GraphModule, example_inputs: list) -> object:
        if (Path(os.environ["TORCHINDUCTOR_CACHE_DIR"]) / "bad-entry").exists():
            raise RuntimeError("cache entry unreadable (test)")
        return gm.forward

    torch._dynamo.reset()
    torch._dynamo.register_backend(backend, name="atlas_test_cache")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "bad-entry").write_text("garbage")
    try:
        t = _trainer(tmp_path, "smoke", "runtime.compile=true", "runtime.compile_backend=atlas_test_cache")
    finally:
        torch._dynamo.reset()
    assert t.compile.enabled and t.compile.cache == "rebuilt"
    assert "moved aside" in t.compile.warning and "cache entry unreadable" in t.compile.warning
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("cache.bad-")]
    assert len(aside) == 1 and (aside[0] / "bad-entry").is_file()  # kept for inspection, never reused
    assert cache.is_dir() and not (cache / "bad-entry").exists()


def test_cuda_graph_modes_are_never_picked_while_accumulating() -> None:
    small = 1_000_000
    assert runtime.compile_mode(resolve("cifar"), small, cuda=True) == "reduce-overhead"
    assert runtime.compile_mode(resolve("cifar", ["train.accumulate=8"]), small, cuda=True) == "default"
    with pytest.raises(Exception, match="cannot accumulate"):
        runtime.compile_mode(resolve("cifar", ["train.accumulate=2", "runtime.compile_mode=reduce-overhead"]), 1, True)
    big = runtime.CUDA_GRAPHS_MAX_PARAMS
    assert runtime.compile_mode(resolve("imagenet128"), big, cuda=True) == "max-autotune-no-cudagraphs"  # long run
    assert runtime.compile_mode(resolve("imagenet128", ["train.max_iters=20"]), big, cuda=True) == "default"
    assert runtime.compile_mode(resolve("imagenet128"), big, cuda=False) == "default"


def test_the_guard_names_missing_gradients_and_gradients_of_a_frozen_d() -> None:
    from workflows.biggan.compile_guard import compare, tolerance

    eager = {
        "D step loss": 1.0,
        "D step gradient norm": 2.0,
        "D step nonzero": {"a", "b"},
        "G step loss": -0.5,
        "G step gradient norm": 3.0,
        "G step nonzero": {"g"},
        "frozen D with gradient": set(),
        "D step after the G step loss": 1.0,
        "D step after the G step gradient norm": 2.0,
        "D step after the G step nonzero": {"a", "b"},
    }
    rtol, atol = tolerance(None)
    assert compare(eager, dict(eager), rtol, atol) == "passed"
    assert compare(eager, {**eager, "D step loss": 1.0 + 1e-7}, rtol, atol) == "passed"  # within fp32 tolerance
    stale = {**eager, "D step after the G step nonzero": {"a"}}  # a graph traced frozen, reused unfrozen
    assert compare(eager, stale, rtol, atol).startswith("D step after the G step: 1 parameter(s) got no gradient")
    leak = {**eager, "frozen D with gradient": {"b"}}
    assert compare(eager, leak, rtol, atol).startswith("G step: 1 frozen D parameter(s) got a gradient")
    assert "differs" in compare(eager, {**eager, "G step gradient norm": float("nan")}, rtol, atol)
    assert tolerance(torch.bfloat16)[0] > rtol
