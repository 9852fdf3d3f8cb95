"""Which layer and which operator a change in the train phase went to, from the runs' profiles.

Each run's `profile.json` (bench/records/profile.py) holds, summed over its profile window,
the time per top-level module of G and D (forward and backward) and the top operators by
self time. Windows differ in length, so every figure is taken per profiled iteration; each
group's figure is the median over its runs that have a profile; a module's move is the
head's median minus the base's. Its share is of the move of the models as wholes (G + D):
"80 % of it in G.blocks.3" says where the profiled time went, which the timeline cannot.
A module or operator is named only where the models' move passes the explanation's gate
(GATE_ALPHA) and its own move is clear (bench.analysis.explain_causes.clear: the bootstrap
interval of the ratio excludes 1 and the Mann-Whitney p is at most 0.05): a profile's own
noise names no layer. Where the models
did not move while the train phase did, the time went elsewhere (data loading, the
host, synchronisation), and the explanation says the layers did not move.
Device time (CUDA) is used where every profile of both groups has it, else host (CPU) time:
on a GPU the host time of an operator is mostly its launch, not its work.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from bench.analysis.explain_causes import GATE_ALPHA, clear
from bench.analysis.stats import Comparison, compare_samples, median
from bench.records.strict_numbers import finite

ROOTS = ("G", "D")  # the models as wholes: the denominator of a module's share, never a cause
KINDS = ("forward", "backward")


@dataclass(frozen=True)
class PartMove:
    """One module (or operator) of the profile: its time per profiled iteration in each group (ms)."""

    name: str
    base_ms: float
    head_ms: float
    cmp: Comparison  # head / base over the runs' figures
    kind: str = ""  # the module's direction that moved most ("forward" / "backward"); "" for an operator

    @property
    def delta_ms(self) -> float:
        return self.head_ms - self.base_ms

    @property
    def clear(self) -> bool:
        return clear(self.cmp) and self.delta_ms != 0


@dataclass(frozen=True)
class LayerMoves:
    """The profiles' decomposition: modules by how much they moved, the models' total move,
    the operator that moved most, and which clock was read."""

    modules: list[PartMove]  # largest move (in the direction of the total) first
    total: PartMove  # G + D as wholes, per iteration
    operator: PartMove | None  # the operator that moved most, clearly, the total's way
    clock: str  # "device" | "cpu"
    runs: tuple[int, int]  # profiles read (base, head)

    @property
    def total_delta_ms(self) -> float:
        return self.total.delta_ms

    @property
    def moved(self) -> bool:
        """The models as wholes moved, at the explanation's gate (GATE_ALPHA, a p needed)."""
        return self.total.cmp.p_value is not None and clear(self.total.cmp, GATE_ALPHA) and self.total.delta_ms != 0

    @property
    def top(self) -> PartMove | None:
        """The module that moved most the models' way, where the models and it moved clearly."""
        if not self.moved:
            return None
        return next((m for m in self.modules if m.clear and self.share(m) is not None), None)

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


def _per_run(rows: list[dict[Any, float]]) -> dict[Any, list[float]]:
    """Per key, the runs' values; a key only some runs' top list names is kept where most of
    them have it (below that its median would be of the slowest runs only)."""
    keys = {k for r in rows for k in r}
    out = {}
    for k in keys:
        found = [r[k] for r in rows if k in r]
        if 2 * len(found) > len(rows):
            out[k] = found
    return out


def _part(name: str, base: list[float], head: list[float], kind: str = "") -> PartMove:
    return PartMove(name, median(base) or 0.0, median(head) or 0.0, compare_samples(head, base), kind)


def _sums(rows: list[dict[tuple[str, str], float]], modules: tuple[str, ...]) -> list[float]:
    return [sum(r.get((m, k), 0.0) for m in modules for k in KINDS) for r in rows]


def layer_moves(base: Sequence[dict[str, Any]], head: Sequence[dict[str, Any]]) -> LayerMoves | None:
    """The decomposition of the profiled time between two groups' profiles; None when a
    group has no usable profile (the window off, an older workload, an import)."""
    base = [p for p in base if _per_iteration(p)]
    head = [p for p in head if _per_iteration(p)]
    if not base or not head:
        return None
    clock = "device" if _uses_device([*base, *head]) else "cpu"
    rb, rh = [_module_ms(p, clock) for p in base], [_module_ms(p, clock) for p in head]
    total = _part("G + D", _sums(rb, ROOTS), _sums(rh, ROOTS))
    sign = 1 if total.delta_ms >= 0 else -1
    b, h = _per_run(rb), _per_run(rh)
    modules = []
    for module in sorted({m for m, _ in b} & {m for m, _ in h}):
        if module in ROOTS:
            continue
        deltas = {k: (median(h.get((module, k), [])) or 0.0) - (median(b.get((module, k), [])) or 0.0) for k in KINDS}
        kind = max(KINDS, key=lambda k: deltas[k] * sign)
        modules.append(_part(module, _sums(rb, (module,)), _sums(rh, (module,)), kind))
    modules.sort(key=lambda m: (-m.delta_ms * sign, m.name))
    ob = _per_run([_operator_ms(p, clock) for p in base])
    oh = _per_run([_operator_ms(p, clock) for p in head])
    ops = [_part(name, ob[name], oh[name]) for name in sorted(set(ob) & set(oh))]
    moved = [o for o in ops if o.clear and o.delta_ms * sign > 0]
    operator = max(moved, key=lambda o: (o.delta_ms * sign, o.name), default=None)
    found = LayerMoves(modules, total, operator, clock, (len(base), len(head)))
    return found if found.moved else replace(found, operator=None)
