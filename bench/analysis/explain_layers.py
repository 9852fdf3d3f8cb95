"""Which layer and which operator a change in the train phase went to, from the runs' profiles.

Each run's `profile.json` (bench/records/profile.py) holds, summed over its profile window,
the time per top-level module of G and D (forward and backward) and the top operators by
self time. Windows differ in length, so every figure is taken per profiled iteration; each
group's figure is the median over its runs that have a profile; a module's move is the
head's median minus the base's. Its share is of the move of the models as wholes (G + D):
"80 % of it in G.blocks.3" says where the profiled time went, which the timeline cannot.
Device time (CUDA) is used where every profile of both groups has it, else host (CPU) time:
on a GPU the host time of an operator is mostly its launch, not its work.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.analysis.stats import median
from bench.records.strict_numbers import finite

ROOTS = ("G", "D")  # the models as wholes: the denominator of a module's share, never a cause
KINDS = ("forward", "backward")


@dataclass(frozen=True)
class PartMove:
    """One module (or operator) of the profile: its time per profiled iteration in each group (ms)."""

    name: str
    base_ms: float
    head_ms: float
    kind: str = ""  # the module's direction that moved most ("forward" / "backward"); "" for an operator

    @property
    def delta_ms(self) -> float:
        return self.head_ms - self.base_ms


@dataclass(frozen=True)
class LayerMoves:
    """The profiles' decomposition: modules by how much they moved, the models' total move,
    the operator that moved most, and which clock was read."""

    modules: list[PartMove]  # largest move (in the direction of the total) first
    total_delta_ms: float  # G + D as wholes, head - base, per iteration
    operator: PartMove | None
    clock: str  # "device" | "cpu"
    runs: tuple[int, int]  # profiles read (base, head)

    @property
    def top(self) -> PartMove | None:
        return self.modules[0] if self.modules else None

    def share(self, part: PartMove) -> float | None:
        """The part's move as a fraction of the models' move; None where the models did not
        move the same way (a share of a move the other way would say nothing)."""
        if self.total_delta_ms == 0 or part.delta_ms * self.total_delta_ms <= 0:
            return None
        return part.delta_ms / self.total_delta_ms


def _per_iteration(profile: dict[str, Any]) -> float | None:
    count = (profile.get("iterations") or {}).get("count")
    return float(count) if isinstance(count, int) and not isinstance(count, bool) and count > 0 else None


def _uses_device(profiles: Sequence[dict[str, Any]]) -> bool:
    return all(p.get("top_by") == "self_device_us" for p in profiles)


def _module_ms(profile: dict[str, Any], clock: str) -> dict[tuple[str, str], float]:
    """(module, direction) -> ms per profiled iteration."""
    n = _per_iteration(profile)
    key = "device_us" if clock == "device" else "cpu_us"
    out: dict[tuple[str, str], float] = {}
    for module, times in (profile.get("modules") or {}).items():
        for kind in KINDS:
            us = finite(((times or {}).get(kind) or {}).get(key))
            if n and us is not None:
                out[(module, kind)] = us / 1000 / n
    return out


def _operator_ms(profile: dict[str, Any], clock: str) -> dict[str, float]:
    n = _per_iteration(profile)
    key = "self_device_us" if clock == "device" else "self_cpu_us"
    out: dict[str, float] = {}
    for row in profile.get("top_operators") or []:
        us = finite((row or {}).get(key)) if isinstance(row, dict) else None
        if n and us is not None and isinstance(row.get("name"), str):
            out[row["name"]] = us / 1000 / n
    return out


def _medians(rows: list[dict[Any, float]]) -> dict[Any, float]:
    """Per key, the median over the runs that have it; a key only some runs' top list names is
    kept where most of them have it (below that its median would be of the slowest runs only)."""
    keys = {k for r in rows for k in r}
    out = {}
    for k in keys:
        found = [r[k] for r in rows if k in r]
        if 2 * len(found) > len(rows):
            out[k] = median(found)
    return {k: v for k, v in out.items() if v is not None}


def layer_moves(base: Sequence[dict[str, Any]], head: Sequence[dict[str, Any]]) -> LayerMoves | None:
    """The decomposition of the profiled time between two groups' profiles; None when a
    group has no usable profile (the window off, an older workload, an import)."""
    base = [p for p in base if _per_iteration(p)]
    head = [p for p in head if _per_iteration(p)]
    if not base or not head:
        return None
    clock = "device" if _uses_device([*base, *head]) else "cpu"
    b = _medians([_module_ms(p, clock) for p in base])
    h = _medians([_module_ms(p, clock) for p in head])
    total = sum(h.get((r, k), 0.0) - b.get((r, k), 0.0) for r in ROOTS for k in KINDS)
    modules = []
    for module in sorted({m for m, _ in b} & {m for m, _ in h}):
        if module in ROOTS:
            continue
        deltas = {k: h.get((module, k), 0.0) - b.get((module, k), 0.0) for k in KINDS}
        kind = max(KINDS, key=lambda k: deltas[k] * (1 if total >= 0 else -1))
        modules.append(
            PartMove(
                module,
                sum(b.get((module, k), 0.0) for k in KINDS),
                sum(h.get((module, k), 0.0) for k in KINDS),
                kind,
            )
        )
    sign = 1 if total >= 0 else -1
    modules.sort(key=lambda m: (-m.delta_ms * sign, m.name))
    ob, oh = _medians([_operator_ms(p, clock) for p in base]), _medians([_operator_ms(p, clock) for p in head])
    ops = [PartMove(name, ob[name], oh[name]) for name in sorted(set(ob) & set(oh))]
    operator = max(ops, key=lambda o: (o.delta_ms * sign, o.name), default=None)
    return LayerMoves(modules, total, operator, clock, (len(base), len(head)))
