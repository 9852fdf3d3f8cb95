"""The trainer: models, optimisers, data, EMA and one G iteration, plus device and seeding.

`train.py` drives it (set-up, logging, checkpoints, signals, stop); this module holds the
state one iteration changes. One G iteration = `d_steps` D steps (each over `accumulate`
real batches) + one G step (over `accumulate` fake batches) + the G_ema update.
"""

from __future__ import annotations

import copy
import os
import random
import sys
import time
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import torch

from workflows.biggan import checkpoint as ckpt
from workflows.biggan.config import config_sha256
from workflows.biggan.data import build_dataset, build_loader
from workflows.biggan.distributed import (
    World,
    average_gradients,
    barrier,
    gather_states,
    init_world,
)
from workflows.biggan.errors import WorkloadConfigError
from workflows.biggan.losses import d_hinge, g_hinge, ortho_penalty
from workflows.biggan.models import Generator, build_models
from workflows.biggan.trainlog import TrainLog


def _flag(value: str, on_cuda: bool) -> bool:
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


class Trainer:
    """Owns the models, optimizers, data stream and counters of one training process."""

    def __init__(self, c: dict[str, Any], run_dir: Path, experiment: str, world: World | None = None) -> None:
        self.c, self.run_dir, self.experiment = c, run_dir, experiment
        self.device = resolve_device(c)
        cuda = self.device.type == "cuda"
        if c["runtime.threads"]:
            torch.set_num_threads(c["runtime.threads"])
        if c["runtime.deterministic"]:
            if cuda:
                os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
            set_deterministic(warn_only=cuda, compiling=c["runtime.compile"] and cuda)
            torch.backends.cudnn.benchmark = False
        elif cuda:
            torch.backends.cudnn.benchmark = True
        self.world = world or init_world(self.device.type)
        if c["train.batch_size"] % self.world.world_size:
            raise WorkloadConfigError(
                f"train.batch_size={c['train.batch_size']} does not split evenly over "
                f"{self.world.world_size} processes; choose a multiple of {self.world.world_size}"
            )
        self.local_batch = c["train.batch_size"] // self.world.world_size
        precision = c["runtime.precision"]
        self.amp_dtype = torch.bfloat16 if (precision == "bf16" or (precision == "auto" and cuda)) else None
        self.channels_last = _flag(c["runtime.channels_last"], cuda)
        self.sha = config_sha256(c)

        seed_everything(c["train.seed"])  # identical initial weights on every rank
        self.G, self.D = build_models(c)
        self.G_ema: Generator | None = copy.deepcopy(self.G) if c["train.ema"] else None
        fmt = torch.channels_last if self.channels_last else torch.contiguous_format
        for m in (self.G, self.D, self.G_ema):
            if m is not None:
                m.to(self.device, memory_format=fmt)
        if self.G_ema is not None:
            self.G_ema.eval().requires_grad_(False)
        fused = _flag(c["runtime.fused_adam"], cuda) and cuda
        adam = dict(
            betas=(c["train.beta1"], c["train.beta2"]), eps=c["train.adam_eps"], **({"fused": True} if fused else {})
        )
        self.g_opt = torch.optim.Adam(self.G.parameters(), lr=c["train.g_lr"], **adam)
        self.d_opt = torch.optim.Adam(self.D.parameters(), lr=c["train.d_lr"], **adam)
        self.G_fwd, self.D_fwd = self.G, self.D
        if c["runtime.compile"] and cuda:
            self.G_fwd, self.D_fwd = torch.compile(self.G), torch.compile(self.D)  # type: ignore[assignment]
        self.z_gen = torch.Generator(device=self.device).manual_seed(c["train.seed"] * 1000 + 17 + self.world.rank)

        self.iteration = 0
        self.data_position = 0  # global batches consumed
        self.resumed_from: str | None = None
        self.dataset = build_dataset(c)
        self._loss_sums = torch.zeros(3, device=self.device)  # g, d_real, d_fake since last log
        self._loss_counts = torch.zeros(3, device=self.device)

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

    def batches(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        loader = build_loader(
            self.dataset, self.c, self.world.rank, self.world.world_size, self.data_position, self.device.type == "cuda"
        )
        fmt = torch.channels_last if self.channels_last else torch.contiguous_format
        for x, y in loader:
            yield (
                x.to(self.device, non_blocking=True).contiguous(memory_format=fmt),
                y.to(self.device, non_blocking=True),
            )

    def step(self, real: Iterator[tuple[torch.Tensor, torch.Tensor]]) -> None:
        """One G iteration (D steps, G step, EMA); losses are accumulated for the log."""
        c, acc = self.c, self.c["train.accumulate"]
        self.G.train()
        self.D.train()
        d_params, g_params = list(self.D.parameters()), list(self.G.parameters())
        for _ in range(c["train.d_steps"]):
            self.d_opt.zero_grad(set_to_none=True)
            for _ in range(acc):
                x, y = next(real)
                self.data_position += 1
                z, yf = self._sample()
                with self._autocast():
                    with torch.no_grad():
                        fake = self.G_fwd(z, yf)
                    logits = self.D_fwd(torch.cat([x, fake.to(x.dtype)]), torch.cat([y, yf])).float()
                loss_real, loss_fake = d_hinge(logits[: x.shape[0]], logits[x.shape[0] :])
                ((loss_real + loss_fake) / acc).backward()
                self._loss_sums[1:] += torch.stack([loss_real.detach(), loss_fake.detach()])
                self._loss_counts[1:] += 1
            average_gradients(d_params, self.world)
            self.d_opt.step()

        self.D.requires_grad_(False)
        self.g_opt.zero_grad(set_to_none=True)
        for _ in range(acc):
            z, yf = self._sample()
            with self._autocast():
                loss = g_hinge(self.D_fwd(self.G_fwd(z, yf), yf).float())
            (loss / acc).backward()
            self._loss_sums[0] += loss.detach()
            self._loss_counts[0] += 1
        if c["train.ortho_reg"] > 0:
            (c["train.ortho_reg"] * ortho_penalty(self.G, skip=(self.G.shared.weight,))).backward()
        average_gradients(g_params, self.world)
        self.g_opt.step()
        self.D.requires_grad_(True)
        self.iteration += 1
        self._update_ema()

    @torch.no_grad()
    def _update_ema(self) -> None:
        if self.G_ema is None:
            return
        decay = self.c["train.ema_decay"] if self.iteration >= self.c["train.ema_start"] else 0.0
        for e, p in zip(self.G_ema.parameters(), self.G.parameters()):
            e.lerp_(p, 1.0 - decay)
        for e, b in zip(self.G_ema.buffers(), self.G.buffers()):
            e.copy_(b)

    def take_losses(self) -> dict[str, float | None]:
        """Mean losses since the last call (one device sync per log line, not per step)."""
        counts = self._loss_counts.clamp(min=1)
        g, dr, df = (self._loss_sums / counts).tolist()
        empty = (self._loss_counts == 0).tolist()
        self._loss_sums.zero_()
        self._loss_counts.zero_()
        return {
            "g_loss": None if empty[0] else g,
            "d_loss_real": None if empty[1] else dr,
            "d_loss_fake": None if empty[2] else df,
        }

    def g_sha256(self) -> str:
        return ckpt.state_sha256(self.G.state_dict())
