"""Data parallelism over `torchrun` processes: gloo on CPU, NCCL on CUDA.

Gradients are averaged with one flattened all-reduce per optimizer step (instead of
wrapping D in DistributedDataParallel, which does not fit GAN steps where D runs in G's
backward without needing its own gradients), so accumulated micro-batches never
synchronise, as under DDP's `no_sync`. Rank 0 alone writes the log and checkpoints.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class World:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    host_group: Any = None  # a gloo group for host-side flags when the main group is NCCL

    @property
    def main(self) -> bool:
        return self.rank == 0

    @property
    def active(self) -> bool:
        return self.world_size > 1


def init_world(device_type: str) -> World:
    """Join the process group when started by torchrun (WORLD_SIZE > 1), else a world of one."""
    size = int(os.environ.get("WORLD_SIZE", "1"))
    if size <= 1:
        return World()
    rank, local = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    if device_type == "cuda":
        torch.cuda.set_device(local)
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if device_type == "cuda" else "gloo")
    # Stop flags are host values: agreeing on them over NCCL would make the host wait for
    # the GPU every iteration (a CUDA tensor read back), so they travel over gloo.
    host = dist.new_group(backend="gloo") if device_type == "cuda" else None
    return World(rank, size, local, host)


def average_gradients(params: list[torch.nn.Parameter], world: World) -> None:
    """One all-reduce of every gradient, called once per optimizer step.

    With `train.accumulate` > 1 the micro-batches' gradients add up locally and only the
    sum is reduced, which is what DistributedDataParallel's `no_sync` achieves.
    """
    if not world.active:
        return
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    flat /= world.world_size
    offset = 0
    for g in grads:
        n = g.numel()
        g.copy_(flat[offset : offset + n].view_as(g))
        offset += n


def any_rank(flags: tuple[bool, ...], world: World) -> tuple[bool, ...]:
    """Each flag true on every rank when it is true on at least one (signals, time limits).

    A CPU tensor over gloo: the host never waits for the GPU to agree on a flag.
    """
    if not world.active:
        return flags
    t = torch.tensor([1.0 if f else 0.0 for f in flags])
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=world.host_group)
    return tuple(bool(v > 0) for v in t.tolist())


def gather_states(state: torch.Tensor, world: World) -> list[torch.Tensor]:
    """Every rank's RNG state (a uint8 tensor), in rank order; [state] in a world of one."""
    if not world.active:
        return [state]
    device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")
    out = [torch.empty_like(state, device=device) for _ in range(world.world_size)]
    dist.all_gather(out, state.to(device))
    return [t.cpu() for t in out]


def barrier(world: World) -> None:
    if world.active:
        dist.barrier()


def shutdown(world: World) -> None:
    if world.active and dist.is_initialized():
        dist.destroy_process_group()


def same_on_all_ranks(value: str, world: World) -> bool:
    """True when every rank holds the same string (e.g. the digest of G's weights)."""
    if not world.active:
        return True
    values: list[str | None] = [None] * world.world_size
    dist.all_gather_object(values, value)
    return len(set(values)) == 1
