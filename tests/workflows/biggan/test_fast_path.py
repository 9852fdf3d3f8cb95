"""The fast path's pieces on the CPU: defaults, compile fallback, no per-micro-batch sync, EMA, data."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from itertools import islice
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from tests.workflows.biggan.conftest import REPO, events, last, run_workload
from tests.workflows.biggan.conftest import env as workload_env
from workflows.biggan import distributed, runtime
from workflows.biggan.config import resolve
from workflows.biggan.data import SyntheticImages, device_batches
from workflows.biggan.distributed import World
from workflows.biggan.models import build_models
from workflows.biggan.trainer import Trainer

STEP = ["runtime.device=cpu", "train.ema_start=1"]


def _trainer(tmp_path: Path, *overrides: str, world: World | None = None) -> Trainer:
    return Trainer(resolve("smoke", [*STEP, *overrides]), tmp_path, "smoke", world=world or World())


def test_defaults_are_fast_on_cuda_and_exact_on_cpu() -> None:
    c = resolve("cifar")
    assert runtime.flag(c["runtime.compile"], True) and not runtime.flag(c["runtime.compile"], False)
    assert runtime.wants_deterministic(c, cuda=False) and not runtime.wants_deterministic(c, cuda=True)
    assert runtime.wants_deterministic(resolve("cifar", ["runtime.deterministic=true"]), cuda=True)
    with torch.device("meta"):
        small = sum(p.numel() for m in build_models(c) for p in m.parameters())
        big = sum(p.numel() for m in build_models(resolve("imagenet128")) for p in m.parameters())
    assert runtime.compile_mode(c, small, cuda=True) == "reduce-overhead"  # CUDA graphs: launch-bound
    assert runtime.compile_mode(c, big, cuda=True) == "max-autotune-no-cudagraphs"  # GPU-bound, long: autotune
    assert runtime.compile_mode(resolve("cifar", ["train.max_iters=100"]), big, cuda=True) == "default"
    assert runtime.compile_mode(resolve("cifar", ["runtime.compile_mode=max-autotune"]), small, True) == "max-autotune"
    assert resolve("smoke", ["runtime.compile=true"])["runtime.compile"] == "true"  # YAML booleans still work


def test_cpu_trainer_is_deterministic_eager_and_fused(tmp_path: Path) -> None:
    t = _trainer(tmp_path)
    assert t.deterministic and not t.compile.enabled and t.G_fwd is t.G
    assert t.g_opt.defaults.get("fused") is True and t.d_opt.defaults.get("fused") is True


@pytest.fixture
def failing_backend() -> str:
    import torch._dynamo

    def backend(gm: torch.fx.GraphModule, example_inputs: list) -> None:
        raise RuntimeError("this backend always fails (test)")

    torch._dynamo.reset()
    torch._dynamo.register_backend(backend, name="atlas_test_failing")
    yield "atlas_test_failing"
    torch._dynamo.reset()


def test_a_failing_compiler_falls_back_to_eager_and_changes_nothing(tmp_path: Path, failing_backend: str) -> None:
    t = _trainer(
        tmp_path / "a",
        "runtime.compile=true",
        f"runtime.compile_backend={failing_backend}",
        f"runtime.compile_cache_dir={tmp_path / 'cache'}",
    )
    assert not t.compile.enabled and t.G_fwd is t.G and t.D_fwd is t.D
    assert "failed" in t.compile.warning and "always fails" in t.compile.warning and "eager" in t.compile.warning
    plain = _trainer(tmp_path / "b")
    assert t.g_sha256() == plain.g_sha256()  # the probe left weights and buffers as they were
    for tr in (t, plain):
        real = tr.batches()
        for _ in range(2):
            tr.step(real)
    assert t.g_sha256() == plain.g_sha256()


@pytest.mark.slow
def test_compile_on_cpu_probes_without_touching_state(tmp_path: Path) -> None:
    import torch._dynamo

    torch._dynamo.reset()
    t = _trainer(
        tmp_path / "a",
        "runtime.compile=true",
        "runtime.compile_backend=aot_eager",
        f"runtime.compile_cache_dir={tmp_path / 'cache'}",
    )
    assert t.compile.enabled and t.compile.warning is None and t.G_fwd is not t.G
    assert t.compile.mode == "default"  # CUDA graphs only on CUDA
    assert t.g_sha256() == _trainer(tmp_path / "b").g_sha256()
    assert all(p.requires_grad and p.grad is None for p in t.d_params + t.g_params)
    real = t.batches()
    t.step(real)
    assert all(isinstance(v, float) for v in t.take_losses().values())
    torch._dynamo.reset()


@pytest.mark.slow
def test_compile_failure_is_a_warning_in_train_jsonl(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc = run_workload(
        run_dir,
        "runtime.compile=true",
        "runtime.compile_backend=no_such_backend",
        f"runtime.compile_cache_dir={tmp_path / 'cache'}",
        "train.max_iters=2",
        "train.sample_grid=false",
    )
    assert proc.returncode == 0, proc.stderr
    assert "warning: torch.compile" in proc.stderr and "eager" in proc.stderr
    evts = events(run_dir)
    warning = last(evts, "warning")
    assert warning["what"] == "compile" and "no_such_backend" in warning["message"]
    warm = last(evts, "warmup")
    assert warm["compile"] is False and warm["compile_cache"] is None
    assert evts[-1]["status"] == "success"


@pytest.mark.parametrize("accumulate", [1, 3])
def test_accumulated_micro_batches_reduce_gradients_once_per_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, accumulate: int
) -> None:
    """As DDP's no_sync: one all-reduce per optimizer step whatever train.accumulate is."""
    reduced: list[int] = []
    real_all_reduce = dist.all_reduce

    def counting(t: torch.Tensor, *args: object, **kwargs: object) -> object:
        reduced.append(t.numel())
        return real_all_reduce(t, *args, **kwargs)

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        monkeypatch.setattr(distributed.dist, "all_reduce", counting)
        t = _trainer(tmp_path, f"train.accumulate={accumulate}", world=World(0, 2, 0))
        real = t.batches()
        t.step(real)
    finally:
        dist.destroy_process_group()
    n_g, n_d = sum(p.numel() for p in t.g_params), sum(p.numel() for p in t.d_params)
    assert reduced == [n_d] * t.c["train.d_steps"] + [n_g]
    assert t.data_position == t.c["train.d_steps"] * accumulate


def test_ema_matches_the_per_tensor_update(tmp_path: Path) -> None:
    t = _trainer(tmp_path, "train.ema_decay=0.9")
    real = t.batches()
    t.step(real)
    ema_before = copy.deepcopy(t.G_ema)
    t.step(real)  # iteration 2 >= ema_start: averaging with decay 0.9
    with torch.no_grad():
        for e, p in zip(ema_before.parameters(), t.G.parameters()):
            e.lerp_(p, 0.1)
        for e, b in zip(ema_before.buffers(), t.G.buffers()):
            e.copy_(b)
    for (k, a), (_, b) in zip(t.G_ema.state_dict().items(), ema_before.state_dict().items()):
        assert torch.equal(a, b), k


def test_synthetic_batches_are_made_whole_and_resume_exactly() -> None:
    c = resolve("smoke", ["data.synthetic_size=40"])
    ds = SyntheticImages(40, 32, 4, seed=0)
    fmt = torch.contiguous_format
    whole = list(islice(device_batches(ds, c, 0, 1, 0, torch.device("cpu"), fmt), 12))  # crosses epochs (5 each)
    resumed = list(islice(device_batches(ds, c, 0, 1, 7, torch.device("cpu"), fmt), 5))
    for (x1, y1), (x2, y2) in zip(whole[7:], resumed):
        assert torch.equal(x1, x2) and torch.equal(y1, y2)
    x, y = whole[0]
    assert x.shape == (8, 3, 32, 32) and x.min() >= -1 and x.max() <= 1
    idx = torch.tensor([0, 5, 9])
    xb, yb = ds.batch(idx)
    for j, i in enumerate(idx.tolist()):  # image i does not depend on the batch it is in
        torch.testing.assert_close(xb[j], ds[i][0], rtol=0, atol=1e-6)
        assert int(yb[j]) == ds[i][1] == i % 4
    assert torch.equal(ds.batch(torch.arange(40))[0], SyntheticImages(40, 32, 4, seed=0).batch(torch.arange(40))[0])
    assert not torch.equal(ds.batch(idx)[0], SyntheticImages(40, 32, 4, seed=1).batch(idx)[0])


# One start of a process that compiles a two-layer model with the real inductor through the
# workload's own path (use_cache_dir, compile_with_fallback), as a run in `argv[1]` would.
CACHED_START = """
import json, sys
from pathlib import Path
import torch
from workflows.biggan import runtime
from workflows.biggan.config import resolve

run_dir = Path(sys.argv[1])
state = runtime.CompileState(enabled=True, requested=True, mode="default", backend="inductor")
state.cache_dir = runtime.use_cache_dir(resolve("smoke", ["runtime.compile=true"]), run_dir)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))

def probe(fwd):
    fwd[0](torch.randn(4, 8)).sum().backward()

runtime.compile_with_fallback([model], probe, state)
print(json.dumps({"enabled": state.enabled, "warning": state.warning, "cache": state.cache,
                  "cache_dir": state.cache_dir, **state.counters}))
"""


@pytest.mark.slow
def test_compiler_cache_next_to_the_runs_makes_the_second_start_warm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real inductor on the CPU, on a model small enough to compile in seconds (the workload's
    own models take minutes cold): two processes, two runs in one results folder; the
    second start finds every graph in the folder beside the runs and compiles nothing."""
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)  # set by inductor in this process
    starts = []
    for name in ("first", "second"):
        proc = subprocess.run(
            [sys.executable, "-c", CACHED_START, str(tmp_path / name)],
            cwd=REPO, env=workload_env(), capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        start = json.loads(proc.stdout.splitlines()[-1])
        assert start["enabled"] and start["warning"] is None, start  # inductor worked
        starts.append(start)
    cache = tmp_path / runtime.CACHE_DIR_NAME
    assert starts[0]["cache_dir"] == starts[1]["cache_dir"] == str(cache) and any(cache.iterdir())
    assert starts[0]["cache"] == "cold" and starts[0]["cache_misses"] > 0
    assert starts[1]["cache"] == "warm" and starts[1]["cache_misses"] == 0 and starts[1]["cache_hits"] > 0
