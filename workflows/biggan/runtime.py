"""How a job runs, not what it trains (`runtime.*`): device, kernels, torch.compile.

On CUDA the defaults take the fast path: torch.compile (CUDA graphs for small models),
non-deterministic cuDNN autotuning, bf16, channels_last. On the CPU they keep resume
bit-exact: deterministic kernels, eager mode. A compiler that fails never stops a run:
the models run eagerly and the reason is returned for the training log.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from workflows.biggan.errors import WorkloadConfigError

# Models with fewer parameters than this (G + D) get CUDA graphs under compile's `auto`
# mode: their whole step is a few milliseconds of GPU work, so kernel launches dominate.
CUDA_GRAPHS_MAX_PARAMS = 30_000_000
CACHE_DIR_NAME = ".torch-compile-cache"
# `auto` autotunes the kernels of big models only for runs at least this long (G iterations)
AUTOTUNE_MIN_ITERS = 10_000
# The user's setting, read before inductor runs: inductor writes its default back to the
# environment once it has chosen a folder.
_ENV_CACHE_DIR = os.environ.get("TORCHINDUCTOR_CACHE_DIR")


def flag(value: str, on_cuda: bool) -> bool:
    """An `auto`/`true`/`false` setting; `auto` means on with CUDA, off on the CPU."""
    return on_cuda if value == "auto" else value == "true"


def resolve_device(c: dict[str, Any]) -> torch.device:
    want = c["runtime.device"]
    if want == "cuda" and not torch.cuda.is_available():
        raise WorkloadConfigError(
            "runtime.device=cuda but PyTorch sees no CUDA device (torch.cuda.is_available() is False); "
            "use runtime.device=auto or runtime.device=cpu"
        )
    if want == "cpu" or not torch.cuda.is_available():
        return torch.device("cpu")
    return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def set_deterministic(warn_only: bool, compiling: bool) -> None:
    """Deterministic kernels (warn-only on CUDA, where a few ops have none).

    The public call also imports TorchInductor's config, which costs seconds of start-up;
    without torch.compile the flag of the core library is all that matters.
    """
    setter = getattr(torch._C, "_set_deterministic_algorithms", None)
    if compiling or setter is None:
        torch.use_deterministic_algorithms(True, warn_only=warn_only)
    else:
        setter(True, warn_only=warn_only)


def wants_deterministic(c: dict[str, Any], cuda: bool) -> bool:
    """`runtime.deterministic=auto`: on for the CPU (bit-exact resume), off on CUDA (cuDNN autotuning)."""
    return flag(c["runtime.deterministic"], not cuda)


def configure_kernels(c: dict[str, Any], device: torch.device, compiling: bool) -> bool:
    """Deterministic kernels or cuDNN autotuning; returns whether the run is deterministic."""
    cuda = device.type == "cuda"
    deterministic = wants_deterministic(c, cuda)
    if deterministic:
        if cuda:
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        set_deterministic(warn_only=cuda, compiling=compiling)
        torch.backends.cudnn.benchmark = False
    elif cuda:
        torch.backends.cudnn.benchmark = True
    return deterministic


def process_start_time() -> float:
    """Unix time at which this process started, good to one clock tick (10 ms).

    Read as its start in ticks since boot (/proc/self/stat field 22) set against
    CLOCK_BOOTTIME now. psutil's create_time adds the boot time /proc/stat gives in whole
    seconds, which put the start up to a second early: before the parent had spawned it,
    and the run's launch phase came out negative. Elsewhere (no /proc): now."""
    try:
        after_name = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        ticks = int(after_name[19])  # field 22; the fields after the name start at field 3
        since_boot = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
        return time.time() - since_boot
    except (OSError, ValueError, IndexError, AttributeError):
        return time.time()


@dataclass
class CompileState:
    """What became of torch.compile in this process; written to the `warmup` event."""

    enabled: bool = False
    mode: str | None = None
    backend: str | None = None
    cache_dir: str | None = None
    cache: str | None = None  # cold | warm | partial | rebuilt (inductor/AOT-autograd cache hits)
    seconds: float | None = None
    warning: str | None = None
    counters: dict[str, int] = field(default_factory=dict)
    requested: bool = False  # runtime.compile asked for it (enabled turns False on a fallback)
    guard: str | None = None  # "passed", or why the compiled path was refused (None: not compiled)
    graphs_after_probe: int | None = None  # dynamo's frame count once probe and guard are done

    @property
    def cudagraphs(self) -> bool:
        """Whether compiled steps replay CUDA graphs (outputs live until the next marked step)."""
        return self.enabled and self.mode in ("reduce-overhead", "max-autotune")

    def record(self) -> dict[str, Any]:
        dyn = dynamo_counts() if self.requested else {}
        recompiles = None
        if self.enabled and self.graphs_after_probe is not None:
            recompiles = dyn["frames"] - self.graphs_after_probe
        return {
            "compile": self.enabled,
            "compile_requested": self.requested,
            "compile_guard": self.guard,
            "graph_breaks": dyn.get("graph_breaks") if self.enabled else None,
            "compiled_graphs": dyn.get("graphs") if self.enabled else None,
            "recompiles": recompiles,
            "compile_mode": self.mode,
            "compile_backend": self.backend,
            "compile_s": self.seconds,
            "compile_cache": self.cache,
            "compile_cache_dir": self.cache_dir,
            "compile_cache_hits": self.counters.get("cache_hits"),
            "compile_cache_misses": self.counters.get("cache_misses"),
        }


def dynamo_counts() -> dict[str, int]:
    """torch's own counters: graph breaks, graphs captured and frames compiled in this process."""
    from torch._dynamo.utils import counters

    return {
        "graph_breaks": int(sum(counters["graph_break"].values())),
        "graphs": int(counters["stats"]["unique_graphs"]),
        "frames": int(counters["frames"]["ok"]),
    }


def compile_mode(c: dict[str, Any], n_params: int, cuda: bool) -> str:
    """The torch.compile mode; `auto`: CUDA graphs for small models, autotuning for long big runs.

    No CUDA graphs while accumulating: a graph replay owns its outputs, gradients included,
    until the next marked step, and each micro-batch is a new step, so the gradients being
    accumulated into would be the previous replay's freed outputs (torch's cudagraph_trees
    refuses exactly that). Copying them out of the graph pool per micro-batch would cost
    what the graphs save, and a model that needs accumulation is big enough for launches
    not to matter. Explicit CUDA-graph modes with accumulation are refused with one line.
    """
    mode = c["runtime.compile_mode"]
    accumulating = c["train.accumulate"] > 1
    if mode != "auto":
        if cuda and accumulating and mode in ("reduce-overhead", "max-autotune"):
            raise WorkloadConfigError(
                f"runtime.compile_mode={mode} uses CUDA graphs, which cannot accumulate gradients over "
                f"train.accumulate={c['train.accumulate']} micro-batches; use runtime.compile_mode="
                "max-autotune-no-cudagraphs or default, or train.accumulate=1"
            )
        return mode
    if not cuda:
        return "default"
    if n_params < CUDA_GRAPHS_MAX_PARAMS:  # launch-bound: graphs pay, autotuning does not
        return "default" if accumulating else "reduce-overhead"
    # autotuning costs minutes once (then inductor's cache keeps the choices) and saves a few %
    # of every step of a GPU-bound model: it pays on long runs only, not on benchmarks
    return "max-autotune-no-cudagraphs" if c["train.max_iters"] >= AUTOTUNE_MIN_ITERS else "default"


def use_cache_dir(c: dict[str, Any], run_dir: Path) -> str:
    """Point inductor's (and Triton's) on-disk cache at a folder that outlives the process.

    `runtime.compile_cache_dir` if set, else TORCHINDUCTOR_CACHE_DIR if the environment
    sets it, else `<run dir's parent>/.torch-compile-cache`: the next segment of a resumed
    run and the next run in the same results folder (Slurm scratch, the OpenShift volume)
    then start warm.
    """
    chosen = c["runtime.compile_cache_dir"] or _ENV_CACHE_DIR
    folder = Path(chosen).expanduser() if chosen else run_dir.resolve().parent / CACHE_DIR_NAME
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        folder = run_dir.resolve() / CACHE_DIR_NAME  # the run dir itself is writable
        folder.mkdir(parents=True, exist_ok=True)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(folder)
    return str(folder)


def _cache_counts() -> dict[str, int]:
    from torch._dynamo.utils import counters

    return {
        "hit": counters["inductor"]["fxgraph_cache_hit"] + counters["aot_autograd"]["autograd_cache_hit"],
        "miss": counters["inductor"]["fxgraph_cache_miss"] + counters["aot_autograd"]["autograd_cache_miss"],
    }


def _root_cause(exc: BaseException) -> str:
    """`Outer: Inner: first line of the innermost message` (compiler errors wrap the cause)."""
    chain = [exc]
    while len(chain) < 10:
        inner = chain[-1].__cause__ or getattr(chain[-1], "inner_exception", None)
        if not isinstance(inner, BaseException):
            break
        chain.append(inner)
    first = (str(chain[-1]).strip().splitlines() or [""])[0][:300]
    names = [type(e).__name__ for e in chain]
    return ": ".join(names + [first]) if first else ": ".join(names)


def set_cache_aside(state: CompileState, why: str) -> str:
    """Move a compiler cache that failed us to `<folder>.bad-<time>` and start an empty one.

    It is never reused (a cached kernel that computes wrong numbers would be loaded again by
    every later run) and never deleted (someone may want to know what was in it).
    """
    import torch._dynamo

    folder = Path(state.cache_dir or "")
    aside = folder.with_name(f"{folder.name}.bad-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
    folder.rename(aside)
    folder.mkdir(parents=True)
    torch._dynamo.reset()
    try:  # kernels inductor already loaded from the old folder
        from torch._inductor.codecache import PyCodeCache

        PyCodeCache.cache_clear()
    except Exception:  # inductor never imported, or another torch: nothing loaded to forget
        pass
    state.cache = "rebuilt"
    return f"compiler cache {folder} was unusable ({why}); moved aside to {aside.name} and rebuilt"


def _cache_filled(state: CompileState) -> bool:
    return bool(state.cache_dir) and Path(state.cache_dir).is_dir() and any(Path(state.cache_dir).iterdir())


def compile_with_fallback(
    modules: list[torch.nn.Module], probe: Callable[[list[Any]], None], state: CompileState
) -> list[Any]:
    """torch.compile each module and run `probe` through them; eager modules if that fails.

    torch.compile is lazy: graphs are built and compiled on the first calls, forward and
    backward. `probe` makes those calls (and must leave the models as it found them), so
    a compiler error surfaces here, before training, and costs a warning instead of the run.
    A failure with a filled compiler cache (a corrupt cache did this) moves the cache aside
    and compiles once more from nothing before giving up.
    """
    import torch._dynamo

    t0 = time.perf_counter()
    before = _cache_counts()
    was_empty = not _cache_filled(state)
    rebuilt = None
    try:
        for attempt in (1, 2):
            try:
                # static shapes: D sees two batch sizes (real + fake, then fake alone); one graph
                # each suits CUDA graphs and avoids symbolic-shape code paths
                compiled = [torch.compile(m, mode=state.mode, backend=state.backend, dynamic=False) for m in modules]
                probe(compiled)
                break
            except torch.OutOfMemoryError:
                raise
            except Exception as exc:  # any compiler or backend failure: train eagerly instead
                if attempt == 1 and _cache_filled(state):
                    rebuilt = set_cache_aside(state, _root_cause(exc))
                    continue
                torch._dynamo.reset()
                state.enabled, state.cache = False, None
                state.warning = (
                    (f"{rebuilt}; " if rebuilt else "")
                    + f"torch.compile (backend {state.backend}, mode {state.mode}) failed: "
                    f"{_root_cause(exc)}; training continues in eager mode"
                )
                state.guard = f"not run: torch.compile failed ({_root_cause(exc)[:200]})"
                return modules
    finally:
        state.seconds = round(time.perf_counter() - t0, 3)
    after = _cache_counts()
    hits, misses = after["hit"] - before["hit"], after["miss"] - before["miss"]
    state.counters = {"cache_hits": hits, "cache_misses": misses}
    if rebuilt:
        state.warning = rebuilt
        return compiled
    # a graph compiled earlier in this process may be found again (D at two batch sizes
    # shares pieces), so an empty folder before the start is what makes a start cold
    state.cache = (
        ("warm" if hits and not misses else "cold" if was_empty or not hits else "partial") if hits or misses else None
    )
    return compiled
