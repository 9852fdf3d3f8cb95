"""The training loop: set-up, logging, checkpoints, signals, stop (the trainer's steps: trainer.py).

One G iteration = `d_steps` D steps (each over `accumulate` real batches) + one G step
(over `accumulate` fake batches) + the G_ema update. The data position counts global
batches consumed, so a resumed run draws exactly the batches an uninterrupted run would.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from workflows.biggan import checkpoint as ckpt
from workflows.biggan.config import nested
from workflows.biggan.distributed import (
    any_rank,
    barrier,
    same_on_all_ranks,
)
from workflows.biggan.errors import WorkloadConfigError
from workflows.biggan.trainer import Trainer
from workflows.biggan.trainlog import TrainLog

EXIT_OK, EXIT_FAILED, EXIT_CONFIG, EXIT_PREEMPTED = 0, 1, 2, 75
STOP_SIGNALS = ("SIGTERM", "SIGUSR1", "SIGINT")


@dataclass
class Outcome:
    status: str  # success | max_seconds | preempted | failed
    iteration: int
    g_sha256: str

    @property
    def exit_code(self) -> int:
        return {"success": EXIT_OK, "max_seconds": EXIT_OK, "preempted": EXIT_PREEMPTED}.get(self.status, EXIT_FAILED)


class _StopRequest:
    """Turns SIGTERM/SIGUSR1/SIGINT into a flag checked after each iteration."""

    def __init__(self) -> None:
        self.signal_name: str | None = None
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        for name in STOP_SIGNALS:
            sig = getattr(signal, name, None)
            if sig is not None:
                try:
                    self._previous[sig] = signal.signal(sig, self._handle)
                except ValueError:  # not the main thread
                    pass

    def _handle(self, signum: int, _frame: Any) -> None:
        self.signal_name = signal.Signals(signum).name

    def uninstall(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


class _Progress:
    """tqdm bar on a terminal, plain lines on stderr otherwise (batch jobs, CI)."""

    def __init__(self, mode: str, total: int, start: int, enabled: bool) -> None:
        self.enabled = enabled
        use_bar = mode == "bar" or (mode == "auto" and sys.stderr.isatty())
        self.bar = None
        if enabled and use_bar:
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, initial=start, unit="it", dynamic_ncols=True, file=sys.stderr)
            except ImportError:
                self.bar = None

    def advance(self, record: dict[str, Any] | None) -> None:
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.update(1)
            if record is not None:
                self.bar.set_postfix(
                    g=_fmt(record["g_loss"]),
                    d=_fmt(record["d_loss_real"]),
                    img_s=_fmt(record["images_per_s"]),
                    refresh=False,
                )
        elif record is not None:
            line(
                f"iter {record['iteration']} images {record['images_seen']} "
                f"{_fmt(record['images_per_s'])} img/s g_loss {_fmt(record['g_loss'])} "
                f"d_loss_real {_fmt(record['d_loss_real'])} d_loss_fake {_fmt(record['d_loss_fake'])}"
            )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _fmt(v: Any) -> str:
    return "nan" if v is None else f"{v:.4g}"


def line(msg: str) -> None:
    print(f"biggan: {msg}", file=sys.stderr, flush=True)


def train(c: dict[str, Any], run_dir: Path, experiment: str) -> Outcome:
    """Run (or resume) one training job in `run_dir`; returns how it ended."""
    stop = _StopRequest()
    stop.install()  # before the (possibly slow) set-up: a signal then still ends cleanly
    try:
        trainer = _prepare(c, run_dir, experiment)
    except BaseException:
        stop.uninstall()
        raise
    world = trainer.world
    log = TrainLog(run_dir, enabled=world.main)
    max_iters = c["train.max_iters"]
    progress: _Progress | None = None
    started = False
    outcome = Outcome("failed", trainer.iteration, "")
    extra: dict[str, Any] = {}
    try:
        real = trainer.batches()
        barrier(world)
        start = _log_start(trainer, log, c, experiment)
        started = True
        progress = _Progress(c["runtime.progress"], max_iters, trainer.iteration, world.main)
        status, saved_at = _loop(trainer, real, log, c, stop, progress, start["time"])
        progress.close()
        _finish(trainer, c, status, saved_at, run_dir, log)
        outcome = Outcome(status, trainer.iteration, trainer.g_sha256())
        if world.active:  # data parallelism must keep every replica's weights bit-identical
            extra["replicas_identical"] = _replicas_identical(trainer)
        if status == "preempted" and world.main:
            line(
                f"stop requested ({stop.signal_name or 'by another rank'}): checkpoint saved at iteration "
                f"{trainer.iteration}; run again with the same --run-dir to resume (exit {EXIT_PREEMPTED})"
            )
        return outcome
    except BaseException:
        try:
            digest = trainer.g_sha256()
        except Exception:  # e.g. a dead CUDA context: keep the original error
            digest = ""
        outcome = Outcome("failed", trainer.iteration, digest)
        raise
    finally:
        if progress is not None:
            progress.close()
        if started:
            log.write(
                "run_stop",
                iteration=outcome.iteration,
                status=outcome.status,
                g_sha256=outcome.g_sha256,
                images_seen=trainer.images_seen,
                **extra,
            )
            if world.main:
                line(f"run_stop {outcome.status} at iteration {outcome.iteration} g_sha256 {outcome.g_sha256[:16]}")
        log.close()
        stop.uninstall()


def _loop(
    trainer: Trainer,
    real: Iterator[Any],
    log: TrainLog,
    c: dict[str, Any],
    stop: _StopRequest,
    progress: _Progress,
    t_start: float,
) -> tuple[str, int]:
    """Iterate until max_iters, a stop signal or max_seconds: (status, iteration last saved)."""
    world, max_iters, log_every = trainer.world, c["train.max_iters"], c["train.log_every"]
    last_t = t_start
    last_images, last_iter, saved_at = trainer.images_seen, trainer.iteration, trainer.iteration
    status = "success"
    while trainer.iteration < max_iters:
        trainer.step(real)
        now = time.time()
        time_up = c["train.max_seconds"] is not None and now - t_start >= c["train.max_seconds"]
        signalled, time_up = any_rank((stop.signal_name is not None, time_up), world, trainer.device)
        stopping = signalled or time_up
        record = None
        if trainer.iteration % log_every == 0 or trainer.iteration == max_iters or stopping:
            record = _train_record(trainer, now, t_start, last_t, last_images, last_iter)
            log.write("train", **record)
            last_t, last_images, last_iter = now, trainer.images_seen, trainer.iteration
        progress.advance(record)
        if stopping and trainer.iteration < max_iters:
            status = "preempted" if signalled else "max_seconds"
            break
        every = c["train.checkpoint_every"]
        if every and trainer.iteration % every == 0 and trainer.iteration < max_iters:
            trainer.save_checkpoint(log)
            saved_at = trainer.iteration
        ev = c["eval.every"]
        if ev and trainer.iteration % ev == 0 and trainer.iteration < max_iters:
            _evaluate(trainer, log)
    return status, saved_at


def _prepare(c: dict[str, Any], run_dir: Path, experiment: str) -> Trainer:
    """A writable run folder and the trainer, restored from the latest checkpoint if any."""
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        if not os.access(run_dir, os.W_OK):
            raise PermissionError("no write permission")
    except OSError as exc:
        raise WorkloadConfigError(f"--run-dir {str(run_dir)!r} is not a writable directory: {exc}") from exc
    trainer = Trainer(c, run_dir, experiment)
    found = ckpt.load_latest(run_dir)
    if found is not None:
        trainer.restore(*found)
    return trainer


def _log_start(trainer: Trainer, log: TrainLog, c: dict[str, Any], experiment: str) -> dict[str, Any]:
    """The run_start event (the MLPerf clock starts here) and its console line."""
    world = trainer.world
    start = log.write(
        "run_start",
        iteration=trainer.iteration,
        resumed_from=trainer.resumed_from,
        experiment=experiment,
        config=nested(c),
        config_sha256=trainer.sha,
        device=str(trainer.device),
        world_size=world.world_size,
        seed=c["train.seed"],
        precision=str(trainer.amp_dtype or torch.float32).replace("torch.", ""),
    )
    if world.main:
        line(
            f"run_start {experiment} at iteration {trainer.iteration}/{c['train.max_iters']} on {trainer.device} "
            f"x{world.world_size}" + (f", resumed from {trainer.resumed_from}" if trainer.resumed_from else "")
        )
    return start


def _finish(trainer: Trainer, c: dict[str, Any], status: str, saved_at: int, run_dir: Path, log: TrainLog) -> None:
    """After the loop: the end state always on disk; samples and evaluation when the run finished."""
    if saved_at != trainer.iteration:
        trainer.save_checkpoint(log)
    if status == "success":
        if c["train.sample_grid"] and trainer.world.main:
            _write_samples(trainer, run_dir / "samples.png")
        if c["eval.at_end"]:
            _evaluate(trainer, log)


def _replicas_identical(trainer: Trainer) -> bool:
    params = ckpt.state_sha256(
        {
            **{f"G.{k}": v for k, v in trainer.G.named_parameters()},
            **{f"D.{k}": v for k, v in trainer.D.named_parameters()},
        }
    )
    return same_on_all_ranks(params, trainer.world)


def _train_record(
    t: Trainer, now: float, t_start: float, last_t: float, last_images: int, last_iter: int
) -> dict[str, Any]:
    dt = max(now - last_t, 1e-9)
    return {
        "iteration": t.iteration,
        "images_seen": t.images_seen,
        "images_per_s": round((t.images_seen - last_images) / dt, 3),
        "g_iters_per_s": round((t.iteration - last_iter) / dt, 4),
        **t.take_losses(),
        "wall_s": round(now - t_start, 4),
    }


@torch.no_grad()
def _write_samples(t: Trainer, path: Path) -> None:
    """An 8x8 grid from fixed z (seeded), classes in order, drawn by G_ema (or G)."""
    try:
        from PIL import Image
    except ImportError:
        line("Pillow is not installed: no samples.png")
        return
    g = t.G_ema if t.G_ema is not None else t.G
    was_training = g.training
    g.eval()
    gen = torch.Generator().manual_seed(t.c["train.seed"] + 20_190_101)
    n = 64
    z = torch.randn(n, g.dim_z, generator=gen).to(t.device)
    y = (torch.arange(n) % t.c["model.n_classes"]).to(t.device)
    imgs = torch.cat([g(z[i : i + 16], y[i : i + 16]).float().cpu() for i in range(0, n, 16)])
    g.train(was_training)
    r = t.c["model.resolution"]
    grid = imgs.view(8, 8, 3, r, r).permute(0, 3, 1, 4, 2).reshape(8 * r, 8 * r, 3)
    arr = ((grid.clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8).numpy()
    tmp = path.with_suffix(".png.tmp")
    Image.fromarray(arr).save(tmp, format="PNG")
    os.replace(tmp, path)


def _evaluate(t: Trainer, log: TrainLog) -> None:
    from workflows.biggan.evaluate import EvalSkipped, inception_metrics

    if not t.world.main:
        return
    try:
        g = t.G_ema if t.G_ema is not None else t.G
        scores = inception_metrics(g, t.dataset, t.c, t.device)
    except EvalSkipped as exc:
        log.write("eval", iteration=t.iteration, skipped=str(exc))
        line(f"eval skipped: {exc}")
        return
    log.write("eval", iteration=t.iteration, **scores)
