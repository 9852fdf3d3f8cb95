"""The training loop: set-up, logging, checkpoints, signals, stop (the trainer's steps: trainer.py).

One G iteration = `d_steps` D steps (each over `accumulate` real batches) + one G step
(over `accumulate` fake batches) + the G_ema update. The data position counts global
batches consumed, so a resumed run draws exactly the batches an uninterrupted run would.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from workflows.biggan import checkpoint as ckpt
from workflows.biggan import runtime
from workflows.biggan.config import nested
from workflows.biggan.distributed import any_rank, barrier, same_on_all_ranks, shutdown
from workflows.biggan.errors import WorkloadConfigError
from workflows.biggan.profile_window import (
    AUTO_ITERS,
    PROFILE_JSON,
    ProfileWindow,
    skipped_profile,
    window_fit,
    write_profile,
)
from workflows.biggan.progress import Progress, line
from workflows.biggan.samples import write_samples
from workflows.biggan.stop import StopRequest
from workflows.biggan.trainer import Trainer
from workflows.biggan.trainlog import TrainLog

EXIT_OK, EXIT_FAILED, EXIT_CONFIG, EXIT_PREEMPTED = 0, 1, 2, 75


@dataclass
class Outcome:
    status: str  # success | max_seconds | preempted | failed
    iteration: int
    g_sha256: str

    @property
    def exit_code(self) -> int:
        return {"success": EXIT_OK, "max_seconds": EXIT_OK, "preempted": EXIT_PREEMPTED}.get(self.status, EXIT_FAILED)


def train(c: dict[str, Any], run_dir: Path, experiment: str) -> Outcome:
    """Run (or resume) one training job in `run_dir`; returns how it ended."""
    process_start = runtime.process_start_time()
    stop = StopRequest()
    stop.install()  # before the (possibly slow) set-up: a signal then still ends cleanly
    try:
        trainer = _prepare(c, run_dir, experiment)
    except BaseException:
        stop.uninstall()
        raise
    world = trainer.world
    log = TrainLog(run_dir, enabled=world.main)
    max_iters = c["train.max_iters"]
    progress: Progress | None = None
    started = False
    outcome = Outcome("failed", trainer.iteration, "")
    extra: dict[str, Any] = {}
    try:
        real = trainer.guard_compile(trainer.batches())  # compiled = eager on the first batch, or eager
        barrier(world)
        start = _log_start(trainer, log, c, experiment)
        started = True
        progress = Progress(c["runtime.progress"], max_iters, trainer.iteration, world.main)
        status, saved_at = _loop(trainer, real, log, stop, progress, process_start, start["time"])
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
        if outcome.status != "failed":  # a failed rank exits without waiting on the others
            # never destroyed, the process group's threads raced interpreter exit: one rank
            # aborted ("terminate called without an active exception") after a clean run_stop
            shutdown(world)


def _loop(
    trainer: Trainer,
    real: Iterator[Any],
    log: TrainLog,
    stop: StopRequest,
    progress: Progress,
    process_start: float,
    t_start: float,
) -> tuple[str, int]:
    """Iterate until max_iters, a stop signal or max_seconds: (status, iteration last saved)."""
    c, world = trainer.c, trainer.world
    max_iters, log_every = c["train.max_iters"], c["train.log_every"]
    last_t = t_start
    last_images, last_iter, saved_at = trainer.images_seen, trainer.iteration, trainer.iteration
    status = "success"
    first = True
    window = _profile_window(trainer)
    profiled = False  # a profiled iteration since the last train line: that line is marked
    while trainer.iteration < max_iters:
        if window is not None and not first and not window.done and not window.running:
            window.start(trainer.iteration)
        profiled = profiled or (window is not None and window.running)
        trainer.step(real)
        if first:
            _log_warmup(trainer, log, process_start, t_start)
            first = False
        now = time.time()
        time_up = c["train.max_seconds"] is not None and now - t_start >= c["train.max_seconds"]
        signalled, time_up = any_rank((stop.signal_name is not None, time_up), world)
        stopping = signalled or time_up
        if window is not None and window.due_to_stop(trainer.iteration, stopping or trainer.iteration == max_iters):
            window.stop(trainer.iteration)  # its summary lands in the interval of the marked line
        record = None
        if trainer.iteration % log_every == 0 or trainer.iteration == max_iters or stopping:
            now = time.time() if profiled else now
            record = _train_record(trainer, now, t_start, last_t, last_images, last_iter)
            if profiled:
                record["profiled"] = True
                profiled = False
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


def _profile_window(trainer: Trainer) -> ProfileWindow | None:
    """The profile window of this process (rank 0 only), or None: off, or the run folder has
    its profile already (a resumed run keeps its first segment's)."""
    n = trainer.c["train.profile_iters"]
    if n == 0 or not trainer.world.main or (trainer.run_dir / PROFILE_JSON).exists():
        return None
    if n is None:  # auto: only where the run keeps its steady images/s
        c = trainer.c
        why = window_fit(
            trainer.iteration, c["train.max_iters"], c["train.log_every"], AUTO_ITERS, c["train.max_seconds"]
        )
        if why is not None:
            write_profile(trainer.run_dir / PROFILE_JSON, skipped_profile(why, trainer.device, trainer.iteration))
            line(f"profile window skipped: {why}")
            return None
        n = AUTO_ITERS
    compiled = trainer.compile.enabled
    return ProfileWindow(n, trainer.run_dir, trainer.device, {"G": (trainer.G, compiled), "D": (trainer.D, compiled)})


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
    """The run_start event (the MLPerf clock starts here), its console line and a compile warning if any."""
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
    if trainer.compile.warning:
        log.write("warning", iteration=trainer.iteration, what="compile", message=trainer.compile.warning)
        if world.main:
            line(f"warning: {trainer.compile.warning}")
    return start


def _log_warmup(t: Trainer, log: TrainLog, process_start: float, run_start: float) -> None:
    """Start-up cost of this process: from its start to its first finished iteration.

    A cloud pod pays it on every restart, so it is logged once per segment, with whether
    the compiler's cache made it a warm start. Waits for the device once, here only.
    """
    if t.device.type == "cuda":
        torch.cuda.synchronize(t.device)
    now = time.time()
    from workflows.biggan.flops import flops_or_none, images_per_g_iteration

    log.write(
        "warmup",
        iteration=t.iteration,
        warmup_s=round(now - process_start, 3),
        setup_s=round(run_start - process_start, 3),
        first_iteration_s=round(now - run_start, 3),
        deterministic=t.deterministic,
        precision=str(t.amp_dtype or torch.float32).replace("torch.", ""),
        # counted after the clock above: FLOPs are a fact of the config, not start-up work
        flops_per_g_iteration=flops_or_none(t.c) if t.world.main else None,
        images_per_g_iteration=images_per_g_iteration(t.c),
        **t.compile.record(),
    )


def _finish(trainer: Trainer, c: dict[str, Any], status: str, saved_at: int, run_dir: Path, log: TrainLog) -> None:
    """After the loop: the end state always on disk; samples and evaluation when the run finished."""
    if saved_at != trainer.iteration:
        trainer.save_checkpoint(log)
    if status == "success":
        if c["train.sample_grid"] and trainer.world.main:
            write_samples(trainer, run_dir / "samples.png")
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
