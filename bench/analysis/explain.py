"""Why two groups of runs differ: which phase moved, which layer, and what changed.

The difference in end-to-end time (push to result, else submit to result, else time to
train: the longest named sum of phases every run has, bench.analysis.time_sums) is cut
into the timeline's phases: per phase the head group's median minus the base group's,
with the project's own statistics (bench.analysis.stats.compare_samples: the ratio of
medians, its seeded BCa bootstrap interval and the Mann-Whitney p). The total is tested
first, once, at GATE_ALPHA (0.01): a comparison of a dozen phases at 0.05 each would name a
phase in most unchanged comparisons. Where the total moved, the phase that moved most the
same way among those that moved clearly (explain_causes.clear) is the explanation's phase;
where it is `train` and both groups have profiles, its move is cut further into modules
and operators (bench.analysis.explain_layers). Then the candidate causes, ranked
(bench.analysis.explain_causes). The same explanation serves `bench explain`, the change
points of `bench history` and the PR comment; bench/render/explain.py words it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bench.analysis.explain_causes import GATE_ALPHA, Cause, CodeChange, RunView, causes, clear, config_changes
from bench.analysis.explain_layers import LayerMoves, layer_moves
from bench.analysis.history import provenance
from bench.analysis.stats import Comparison, compare_samples, median, smallest_p
from bench.analysis.time_sums import SUM_BY_KEY
from bench.records.strict_numbers import finite
from bench.records.timeline import ALL_PHASES

if TYPE_CHECKING:
    from bench.records.read import RunData

TOTALS = ("push_to_result_s", "submit_to_result_s", "time_to_train_s")  # the first every run has is the total
PROFILED_PHASE = "train"  # the phase the profile window samples


@dataclass(frozen=True)
class PhaseMove:
    """One phase (or the total) in both groups: medians (s) and the comparison head / base."""

    key: str  # "train", or the total's key
    label: str
    base_s: float
    head_s: float
    cmp: Comparison

    @property
    def delta_s(self) -> float:
        return self.head_s - self.base_s

    @property
    def clear(self) -> bool:
        return clear(self.cmp)

    @property
    def gate(self) -> bool:
        """The total moved at GATE_ALPHA (a Mann-Whitney p is needed: 3 runs a side at least)."""
        return self.cmp.p_value is not None and clear(self.cmp, GATE_ALPHA)


@dataclass(frozen=True)
class Explanation:
    """Everything `bench explain` says of two groups of one environment's runs."""

    env: str
    base: str  # commit (or a side's name) of each group
    head: str
    n_base: int
    n_head: int
    total: PhaseMove | None  # None: no named sum every run has (no timelines)
    phases: list[PhaseMove]  # largest move first
    phase: PhaseMove | None  # the explanation's phase: the largest clear move (None: the total did not move)
    layers: LayerMoves | None
    layers_note: str  # why there is no layer decomposition, where there is none
    config: list[str] | None  # config changes; [] unchanged; None unknown
    causes: list[Cause]
    code: CodeChange

    @property
    def smallest_p(self) -> float:
        """The smallest p these runs a side can give: above GATE_ALPHA, no phase can be named."""
        return smallest_p(self.n_head, self.n_base)

    @property
    def top_cause(self) -> Cause | None:
        return self.causes[0] if self.causes else None

    @property
    def share_of_total(self) -> float | None:
        """The phase's move as a fraction of the total's, where both moved the same way."""
        if self.phase is None or self.total is None or self.total.delta_s * self.phase.delta_s <= 0:
            return None
        return self.phase.delta_s / self.total.delta_s


class ExplainError(ValueError):
    """Two groups that cannot be explained (a side without runs): one line for the user."""


def view_of_record(run: RunData) -> RunView:
    """A whole record's view: figures, provenance, config and profile."""
    from bench.analysis.metrics import run_metrics

    values = {k: v for k, v in run_metrics(run).values.items() if finite(v) is not None}
    config = run.meta.get("config")
    return RunView(
        run.run_id,
        run.git_sha,
        values,
        provenance(run.meta),
        config if isinstance(config, dict) else None,
        run.config_sha256,
        run.profile,
    )


def view_of_entry(entry: dict[str, Any], profile: dict[str, Any] | None = None) -> RunView:
    """A history entry's view (bench.analysis.history.run_entry): no config dict; a profile
    only where the caller found the record's profile.json."""
    metrics = entry.get("metrics") if isinstance(entry.get("metrics"), dict) else {}
    values = {k: float(v) for k, v in metrics.items() if finite(v) is not None}
    prov = entry.get("provenance") if isinstance(entry.get("provenance"), dict) else {}
    return RunView(str(entry.get("run_id")), entry.get("commit"), values, prov, None, prov.get("config"), profile)


def _move(key: str, label: str, base: Sequence[RunView], head: Sequence[RunView], field: str = "") -> PhaseMove | None:
    """`key`'s move (its figure is `field`, else `key` itself)."""
    field = field or key
    b = [r.values[field] for r in base if r.values.get(field) is not None]
    h = [r.values[field] for r in head if r.values.get(field) is not None]
    mb, mh = median(b), median(h)
    if mb is None or mh is None:
        return None
    return PhaseMove(key, label, mb, mh, compare_samples(h, b))


def _total(base: Sequence[RunView], head: Sequence[RunView]) -> PhaseMove | None:
    for key in TOTALS:
        if all(r.values.get(key) is not None for r in [*base, *head]):
            return _move(key, SUM_BY_KEY[key].label, base, head)
    return None


def _layers(phase: PhaseMove | None, base: Sequence[RunView], head: Sequence[RunView]) -> tuple[LayerMoves | None, str]:
    if phase is None or phase.key != PROFILED_PHASE:
        return None, ""
    missing = [name for name, side in (("base", base), ("head", head)) if not any(r.profile for r in side)]
    if missing:
        return None, f"no profile.json in the {' and '.join(missing)} runs"
    found = layer_moves([r.profile for r in base if r.profile], [r.profile for r in head if r.profile])
    if found is not None:
        return found, ""
    skipped = [name for name, side in (("base", base), ("head", head)) if any(_skipped(r.profile) for r in side)]
    if skipped:  # train.profile_iters auto on runs too short to keep their steady images/s
        return None, f"profile window skipped in the {' and '.join(skipped)} runs (too short)"
    return None, "no usable profile window"


def _skipped(profile: dict[str, Any] | None) -> bool:
    return isinstance(profile, dict) and isinstance(profile.get("skipped"), str)


def explain(
    env: str,
    base_name: str,
    head_name: str,
    base: Sequence[RunView],
    head: Sequence[RunView],
    code: CodeChange,
) -> Explanation:
    """The explanation of head against base (raises ExplainError when a side has no runs)."""
    empty = [f"{name} ({label})" for name, label, side in (("base", base_name, base), ("head", head_name, head))
             if not side]  # fmt: skip
    if empty:
        raise ExplainError(f"no runs for the {' and '.join(empty)} group: nothing to compare")
    phases = [m for p in ALL_PHASES if (m := _move(p, p, base, head, f"phase_{p}_s")) is not None]
    phases.sort(key=lambda m: (-abs(m.delta_s), m.key))
    total = _total(base, head)
    moved = [m for m in phases if m.clear and total is not None and m.delta_s * total.delta_s > 0]
    phase = moved[0] if moved and total is not None and total.gate else None
    layers, note = _layers(phase, base, head)
    config = config_changes(base, head)
    return Explanation(
        env,
        base_name,
        head_name,
        len(base),
        len(head),
        total,
        phases,
        phase,
        layers,
        note,
        config,
        causes(base, head, code, config, total.delta_s if total is not None else 0.0),
        code,
    )
