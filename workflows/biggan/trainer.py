"""The trainer: models, optimisers, data, EMA, torch.compile and one G iteration.

`train.py` drives it (set-up, logging, checkpoints, signals, stop); `runtime.py` chooses
how it runs (device, kernels, compiler). This module holds the state one iteration
changes. One G iteration = `d_steps` D steps (each over `accumulate` real batches) + one
G step (over `accumulate` fake batches) + the G_ema update.
"""

from __future__ import annotations

import copy
import itertools
import sys
import time
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import torch

from workflows.biggan import checkpoint as ckpt
from workflows.biggan import runtime
from workflows.biggan.config import config_sha256
from workflows.biggan.data import Batches, build_dataset, device_batches
from workflows.biggan.distributed import (
    World,
    any_rank,
    average_gradients,
    barrier,
    gather_states,
    init_world,
)
from workflows.biggan.errors import WorkloadConfigError
from workflows.biggan.losses import d_hinge, g_hinge, ortho_penalty
from workflows.biggan.models import Generator, build_models
from workflows.biggan.trainlog import TrainLog


class Trainer:
    """Owns the models, optimizers, data stream and counters of one training process."""

    def __init__(self, c: dict[str, Any], run_dir: Path, experiment: str, world: World | None = None) -> None:
        self.c, self.run_dir, self.experiment = c, run_dir, experiment
        self.device = runtime.resolve_device(c)
        cuda = self.device.type == "cuda"
        if c["runtime.threads"]:
            torch.set_num_threads(c["runtime.threads"])
        compiling = runtime.flag(c["runtime.compile"], cuda)
        self.compile = runtime.CompileState(enabled=compiling, requested=compiling)
        if compiling:  # before anything imports inductor, which settles on a folder
            self.compile.cache_dir = runtime.use_cache_dir(c, run_dir)
        self.deterministic = runtime.configure_kernels(c, self.device, compiling)
        self.world = world or init_world(self.device.type)
        if c["train.batch_size"] % self.world.world_size:
            raise WorkloadConfigError(
                f"train.batch_size={c['train.batch_size']} does not split evenly over "
                f"{self.world.world_size} processes; choose a multiple of {self.world.world_size}"
            )
        self.local_batch = c["train.batch_size"] // self.world.world_size
        precision = c["runtime.precision"]
        self.amp_dtype = torch.bfloat16 if (precision == "bf16" or (precision == "auto" and cuda)) else None
        self.channels_last = runtime.flag(c["runtime.channels_last"], cuda)
        self.fmt = torch.channels_last if self.channels_last else torch.contiguous_format
        self.sha = config_sha256(c)

        runtime.seed_everything(c["train.seed"])  # identical initial weights on every rank
        self.G, self.D = build_models(c)
        self.G_ema: Generator | None = copy.deepcopy(self.G) if c["train.ema"] else None
        for m in (self.G, self.D, self.G_ema):
            if m is not None:
                m.to(self.device, memory_format=self.fmt)
        self.g_params, self.d_params = list(self.G.parameters()), list(self.D.parameters())
        if self.G_ema is not None:
            self.G_ema.eval().requires_grad_(False)
            self._ema = (
                list(self.G_ema.parameters()),
                self.g_params,
                list(self.G_ema.buffers()),
                list(self.G.buffers()),
            )
        # one kernel per optimizer step (CPU and CUDA) instead of a dozen operators per tensor
        adam = dict(
            betas=(c["train.beta1"], c["train.beta2"]),
            eps=c["train.adam_eps"],
            **({"fused": True} if runtime.flag(c["runtime.fused_adam"], True) else {}),
        )
        self.g_opt = torch.optim.Adam(self.g_params, lr=c["train.g_lr"], **adam)
        self.d_opt = torch.optim.Adam(self.d_params, lr=c["train.d_lr"], **adam)
        self.z_gen = torch.Generator(device=self.device).manual_seed(c["train.seed"] * 1000 + 17 + self.world.rank)

        self.iteration = 0
        self.data_position = 0  # global batches consumed
        self.resumed_from: str | None = None
        self.dataset = build_dataset(c)
        self._loss_sums = [torch.zeros((), device=self.device) for _ in range(3)]  # g, d_real, d_fake since last log
        self._loss_counts = [0, 0, 0]
        self.G_fwd, self.D_fwd = self.G, self.D
        if compiling:
            self._compile()

    def _compile(self) -> None:
        n_params = sum(p.numel() for p in self.g_params + self.d_params)
        self.compile.mode = runtime.compile_mode(self.c, n_params, self.device.type == "cuda")
        self.compile.backend = self.c["runtime.compile_backend"]
        self.G_fwd, self.D_fwd = runtime.compile_with_fallback([self.G, self.D], self._probe, self.compile)

    def _probe(self, fwd: list[Any]) -> None:
        """One D and one G step's calls through `fwd` (compiles them); the models are left as found."""
        g_fwd, d_fwd = fwd
        saved = {id(b): b.clone() for m in (self.G, self.D) for b in m.buffers()}  # BN stats, SN u
        gen = torch.Generator(device=self.device).manual_seed(1)
        z = torch.randn(self.local_batch, self.G.dim_z, generator=gen, device=self.device)
        y = torch.randint(self.c["model.n_classes"], (self.local_batch,), generator=gen, device=self.device)
        res = self.c["model.resolution"]
        x = torch.zeros(self.local_batch, 3, res, res, device=self.device)
        try:
            self._mark_step()
            with self._autocast():
                with torch.no_grad():
                    fake = g_fwd(z, y)
                logits = d_fwd(torch.cat([x.contiguous(memory_format=self.fmt), fake.to(x.dtype)]), torch.cat([y, y]))
            logits.float().sum().backward()
            self._mark_step()
            self.D.requires_grad_(False)
            with self._autocast():
                out = d_fwd(g_fwd(z, y), y)
            out.float().sum().backward()
        finally:
            self.D.requires_grad_(True)
            for m in (self.G, self.D):
                m.zero_grad(set_to_none=True)
                for b in m.buffers():
                    b.copy_(saved[id(b)])

    def _mark_step(self) -> None:
        """Tell CUDA graphs (compile's reduce-overhead mode) that earlier outputs are dead.

        Only where graphs are replayed: a marked step frees the previous replay's outputs,
        gradients included, so it must never come between two accumulated micro-batches
        (`runtime.compile_mode` never picks CUDA graphs with train.accumulate > 1).
        """
        if self.compile.cudagraphs:
            torch.compiler.cudagraph_mark_step_begin()

    def guard_compile(self, real: Iterator[tuple[torch.Tensor, torch.Tensor]]) -> Iterator[Any]:
        """Prove the compiled steps on the first real batch (compile_guard.py), else train eagerly.

        Returns the batch stream with that batch put back: the run consumes the same data
        whether the guard ran or not. A compiled path that fails with a warm compiler cache
        gets the cache moved aside and one more compile from nothing before it is refused.
        """
        if not self.compile.enabled:
            return real
        import torch._dynamo

        from workflows.biggan.compile_guard import run_guard

        first = next(real)
        x, y = first
        for attempt in (1, 2):
            verdict = run_guard(self, self.G_fwd, self.D_fwd, x[: self.local_batch], y[: self.local_batch])
            if verdict == "passed" or attempt == 2 or not self.compile.counters.get("cache_hits"):
                break
            note = runtime.set_cache_aside(self.compile, f"compile guard: {verdict}")
            self.compile.warning = note if not self.compile.warning else f"{self.compile.warning}; {note}"
            self._compile()
            if not self.compile.enabled:  # the second compile failed: its warning says why
                return itertools.chain([first], real)
        if verdict == "passed" and any_rank((False,), self.world)[0]:
            verdict = "failed on another rank (its train.jsonl is not written; rank 0's is)"
        elif verdict != "passed":
            any_rank((True,), self.world)  # every rank trains the same way
        self.compile.guard = verdict
        if verdict != "passed":
            torch._dynamo.reset()
            self.G_fwd, self.D_fwd = self.G, self.D
            self.compile.enabled = False
            self.compile.warning = (
                f"{self.compile.warning}; " if self.compile.warning else ""
            ) + f"compile guard failed ({verdict}); training continues in eager mode"
        else:
            self.compile.graphs_after_probe = runtime.dynamo_counts()["frames"]
        return itertools.chain([first], real)

    # ---- checkpoints -------------------------------------------------------------
    def bundle(self) -> dict[str, Any]:
        return {
            "iteration": self.iteration,
            "data_position": self.data_position,
            "images_seen": self.images_seen,
            "config_sha256": self.sha,
            "config": dict(self.c),
            "experiment": self.experiment,
            "G": self.G.state_dict(),
            "D": self.D.state_dict(),
            "G_ema": self.G_ema.state_dict() if self.G_ema is not None else {},
            "g_optim": self.g_opt.state_dict(),
            "d_optim": self.d_opt.state_dict(),
            "rng": {**ckpt.capture_rng(self.z_gen), "z_ranks": gather_states(self.z_gen.get_state(), self.world)},
        }

    def restore(self, bundle: dict[str, Any], path: Path) -> None:
        old = bundle.get("config", {})
        changed = sorted(k for k in self.c if k.startswith("model.") and old.get(k, self.c[k]) != self.c[k])
        if changed:
            raise WorkloadConfigError(
                f"checkpoint {path} was trained with a different model ("
                + ", ".join(f"{k}={old[k]!r} there, {self.c[k]!r} now" for k in changed)
                + "); use a new --run-dir or the same settings"
            )
        if bundle["config_sha256"] != self.sha and self.world.main:
            print(
                f"biggan: warning: resuming {path.name} with a changed configuration "
                f"(config_sha256 {bundle['config_sha256'][:12]} -> {self.sha[:12]})",
                file=sys.stderr,
            )
        try:
            self.G.load_state_dict(bundle["G"])
            self.D.load_state_dict(bundle["D"])
            if self.G_ema is not None and bundle["G_ema"]:
                self.G_ema.load_state_dict(bundle["G_ema"])
            elif self.G_ema is not None:
                self.G_ema.load_state_dict(bundle["G"])
            self.g_opt.load_state_dict(bundle["g_optim"])
            self.d_opt.load_state_dict(bundle["d_optim"])
        except (RuntimeError, ValueError, KeyError) as exc:
            raise WorkloadConfigError(f"checkpoint {path} does not fit this model: {exc}") from exc
        self.iteration = int(bundle["iteration"])
        self.data_position = int(bundle["data_position"])
        rng = dict(bundle["rng"])
        z_ranks = rng.get("z_ranks")
        if z_ranks is not None and len(z_ranks) == self.world.world_size:
            rng["z"] = z_ranks[self.world.rank]
        elif self.world.rank != 0:  # another world size: a fresh stream per rank
            rng["z"] = self.z_gen.manual_seed(
                self.c["train.seed"] * 1000 + 17 + self.world.rank + 7919 * self.iteration
            ).get_state()
        ckpt.restore_rng(rng, self.z_gen)
        self.resumed_from = path.name

    def save_checkpoint(self, log: TrainLog) -> None:
        t0 = time.perf_counter()
        bundle = self.bundle()  # collective on every rank (z streams are gathered)
        if self.world.main:
            path = ckpt.save(self.run_dir, bundle, self.c["train.checkpoint_keep"])
            log.write(
                "checkpoint",
                iteration=self.iteration,
                path=str(path.relative_to(self.run_dir)),
                seconds=round(time.perf_counter() - t0, 4),
            )
        barrier(self.world)

    # ---- training ----------------------------------------------------------------
    @property
    def images_seen(self) -> int:
        return self.data_position * self.c["train.batch_size"]

    def _autocast(self) -> Any:
        if self.amp_dtype is None:
            return nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.amp_dtype)

    def _sample(self) -> tuple[torch.Tensor, torch.Tensor]:
        z = torch.randn(self.local_batch, self.G.dim_z, generator=self.z_gen, device=self.device)
        y = torch.randint(self.c["model.n_classes"], (self.local_batch,), generator=self.z_gen, device=self.device)
        return z, y

    def batches(self) -> Batches:
        return device_batches(
            self.dataset, self.c, self.world.rank, self.world.world_size, self.data_position, self.device, self.fmt
        )

    def step(self, real: Iterator[tuple[torch.Tensor, torch.Tensor]]) -> None:
        """One G iteration (D steps, G step, EMA); losses are summed on the device for the log.

        Nothing here waits for the device: no `.item()`, no branch on a tensor's value,
        so the host queues the next kernels while the GPU runs the current ones.
        """
        c, acc = self.c, self.c["train.accumulate"]
        if not self.G.training or not self.D.training:
            self.G.train()
            self.D.train()
        for _ in range(c["train.d_steps"]):
            self.d_opt.zero_grad(set_to_none=True)
            for _ in range(acc):
                x, y = next(real)
                self.data_position += 1
                z, yf = self._sample()
                self._mark_step()
                with self._autocast():
                    with torch.no_grad():
                        fake = self.G_fwd(z, yf)
                    logits = self.D_fwd(torch.cat([x, fake.to(x.dtype)]), torch.cat([y, yf])).float()
                loss_real, loss_fake = d_hinge(logits[: x.shape[0]], logits[x.shape[0] :])
                loss = loss_real + loss_fake
                (loss / acc if acc > 1 else loss).backward()
                torch._foreach_add_(self._loss_sums[1:], [loss_real.detach(), loss_fake.detach()])
            self._loss_counts[1] += acc
            self._loss_counts[2] += acc
            average_gradients(self.d_params, self.world)  # once per optimizer step, not per micro-batch
            self.d_opt.step()

        for p in self.d_params:
            p.requires_grad_(False)
        self.g_opt.zero_grad(set_to_none=True)
        for _ in range(acc):
            z, yf = self._sample()
            self._mark_step()
            with self._autocast():
                loss = g_hinge(self.D_fwd(self.G_fwd(z, yf), yf).float())
            (loss / acc if acc > 1 else loss).backward()
            self._loss_sums[0].add_(loss.detach())
        self._loss_counts[0] += acc
        if c["train.ortho_reg"] > 0:
            (c["train.ortho_reg"] * ortho_penalty(self.G, skip=(self.G.shared.weight,))).backward()
        average_gradients(self.g_params, self.world)
        self.g_opt.step()
        for p in self.d_params:
            p.requires_grad_(True)
        self.iteration += 1
        self._update_ema()

    @torch.no_grad()
    def _update_ema(self) -> None:
        """G_ema <- lerp(G_ema, G, 1 - decay) and G's buffers copied: two multi-tensor operators."""
        if self.G_ema is None:
            return
        decay = self.c["train.ema_decay"] if self.iteration >= self.c["train.ema_start"] else 0.0
        ema_params, params, ema_buffers, buffers = self._ema
        torch._foreach_lerp_(ema_params, params, 1.0 - decay)
        torch._foreach_copy_(ema_buffers, buffers)

    def take_losses(self) -> dict[str, float | None]:
        """Mean losses since the last call (one device sync per log line, not per step)."""
        sums = torch.stack(self._loss_sums).tolist()
        means = [s / n if n else None for s, n in zip(sums, self._loss_counts)]
        for t in self._loss_sums:
            t.zero_()
        self._loss_counts = [0, 0, 0]
        return {"g_loss": means[0], "d_loss_real": means[1], "d_loss_fake": means[2]}

    def g_sha256(self) -> str:
        return ckpt.state_sha256(self.G.state_dict())
