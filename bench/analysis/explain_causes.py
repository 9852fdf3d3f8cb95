"""What changed between two groups of runs, ranked: the candidate causes of a change.

An explanation joins where the time went (bench.analysis.explain) with what differs
between the groups. Each side's value of a fact is the one most of its runs recorded
(bench.analysis.history.dominant, as a change point's "what changed" reads it). The
candidates, in the order they are ranked, most direct first:

1. config: the job was asked to do something else (`batch_size 8 → 16`; runtime settings
   such as threads or precision count, though `config_sha256` leaves them out);
2. platform: driver, CUDA, torch, image, kernel, env.yaml, shape (the provenance fields
   `bench history` compares);
3. CPU allowance: the cgroup's cores;
4. host load: the whole machine's CPU use, steal or iowait moved by at least
   HOST_LOAD_POINTS percentage points, and clearly (`clear`: the project's bootstrap
   interval of the ratio excludes 1 and the Mann-Whitney p, where there are runs enough
   for one, is at most ALPHA), the way that explains the change: up where the runs got
   slower, down where they got faster. The figure is the whole machine's, the job's own
   use included: a job that waits more (a sleep, a slower I/O) lowers it, and a lower
   load never explains a slower run;
5. node: the hosts the runs landed on;
6. code: the files changed between the commits (`git diff`, bench.gitops.code_changes).

A measured or recorded difference outranks the code diff: two commits always differ in
code, and a change of platform under unchanged code is the more specific cause.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.analysis.history import PROVENANCE, dominant
from bench.analysis.stats import Comparison, compare_samples, median

ALPHA = 0.05
# The test of a whole comparison (its total, the profiled models as wholes): a phase or a
# layer is named only where it passed. At most 1 false alarm in 50 unchanged comparisons
# asks for under 2 %; 0.01 needs 5 runs a side at least (the smallest exact Mann-Whitney p
# of 4 vs 4 is 0.029).
GATE_ALPHA = 0.01
HOST_LOAD_POINTS = 10.0
# Settings that name a place, not a way of running: a different data path is not a cause.
NOT_CAUSES = frozenset({"data.path", "runtime.compile_cache_dir", "runtime.progress"})
PLATFORM = tuple((k, label) for k, label in PROVENANCE if k not in ("code", "node", "config"))
HOST_LOAD = (
    ("host_cpu_util_pct", "host CPU"),
    ("host_steal_pct", "host CPU steal"),
    ("host_iowait_pct", "host iowait"),
)


@dataclass(frozen=True)
class RunView:
    """What an explanation reads of one run: its catalogue figures, provenance, config and
    profile. Built from a whole record or from a history entry (which has no config dict
    and no profile: those parts are then unknown, never guessed)."""

    run_id: str
    commit: str | None
    values: dict[str, float]
    provenance: dict[str, str | None]
    config: dict[str, Any] | None = None
    config_sha256: str | None = None
    profile: dict[str, Any] | None = None


@dataclass(frozen=True)
class CodeChange:
    """Files changed base -> head: (path, lines added, lines removed; None for a binary
    file), or `unknown` saying why they cannot be listed. `same`: one commit on both sides."""

    base: str
    head: str
    files: list[tuple[str, int | None, int | None]] = field(default_factory=list)
    unknown: str = ""

    @property
    def same(self) -> bool:
        return bool(self.base) and self.base == self.head

    def biggest(self, n: int = 3) -> list[str]:
        """The `n` files with the most lines changed, most first."""
        ranked = sorted(self.files, key=lambda f: (-((f[1] or 0) + (f[2] or 0)), f[0]))
        return [f[0] for f in ranked[:n]]


@dataclass(frozen=True)
class Cause:
    """One candidate cause: its kind (config, platform, CPU allowance, host load, node, code)
    and the words for it ("driver 535.00 → 550.54")."""

    kind: str
    text: str


def clear(cmp: Comparison, alpha: float = ALPHA) -> bool:
    """A move the runs show: the ratio's bootstrap interval excludes 1, and the Mann-Whitney
    p (where each side has the 3 runs it needs) is at most `alpha`."""
    if cmp.ci_low is None or cmp.ci_high is None or cmp.ci_low <= 1 <= cmp.ci_high:
        return False
    return cmp.p_value is None or cmp.p_value <= alpha


def flatten(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """{"train": {"batch_size": 8}} -> {"train.batch_size": 8}."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def _common_config(runs: Sequence[RunView]) -> dict[str, Any] | None:
    """The config most of the runs recorded (flattened), None when none recorded one."""
    seen = Counter(json.dumps(flatten(r.config), sort_keys=True, default=str) for r in runs if r.config)
    return json.loads(seen.most_common(1)[0][0]) if seen else None


def config_changes(base: Sequence[RunView], head: Sequence[RunView]) -> list[str] | None:
    """["train.batch_size 8 → 16", ...]; [] when unchanged; None when unknown (no config on a side)."""
    b, h = _common_config(base), _common_config(head)
    if b is None or h is None:
        hb = dominant([{"c": r.config_sha256} for r in base], "c")
        hh = dominant([{"c": r.config_sha256} for r in head], "c")
        if hb is None or hh is None:
            return None
        return [] if hb == hh else [f"config {hb[:12]} → {hh[:12]}"]
    keys = sorted((set(b) | set(h)) - NOT_CAUSES)
    return [f"{k} {b.get(k, '(none)')} → {h.get(k, '(none)')}" for k in keys if b.get(k) != h.get(k)]


def _side(runs: Sequence[RunView], key: str) -> str | None:
    return dominant([r.provenance for r in runs], key)


def _short(value: str | None) -> str:
    """A provenance value for a sentence: a digest to its first 12 hex digits."""
    text = value or "?"
    if text.startswith("sha256:") and len(text) > 19:
        return text[:19] + "…"
    return text if len(text) <= 60 else text[:59] + "…"


def platform_changes(base: Sequence[RunView], head: Sequence[RunView], keys=PLATFORM) -> list[str]:
    """["driver 535.00 → 550.54", ...] for each provenance field whose common value differs."""
    return [
        f"{label} {_short(_side(base, k))} → {_short(_side(head, k))}"
        for k, label in keys
        if _side(base, k) != _side(head, k)
    ]


def _values(runs: Sequence[RunView], key: str) -> list[float]:
    return [r.values[key] for r in runs if r.values.get(key) is not None]


def host_load_changes(base: Sequence[RunView], head: Sequence[RunView], slower: float = 0.0) -> list[str]:
    """["host CPU 70 % → 97 %"] where a host-load figure moved by HOST_LOAD_POINTS and clearly;
    with `slower` (the total's move head - base, s) only a move the same way (more load,
    more time) counts."""
    out = []
    for key, label in HOST_LOAD:
        b, h = _values(base, key), _values(head, key)
        mb, mh = median(b), median(h)
        if mb is None or mh is None or abs(mh - mb) < HOST_LOAD_POINTS or (mh - mb) * slower < 0:
            continue
        if clear(compare_samples(h, b)):
            out.append(f"{label} {mb:.0f} % → {mh:.0f} %")
    return out


def allowance_changes(base: Sequence[RunView], head: Sequence[RunView]) -> list[str]:
    """["CPU allowance 4 → 2 cores"] where the groups' cgroup CPU limits differ."""
    b, h = median(_values(base, "cpu_limit_cores")), median(_values(head, "cpu_limit_cores"))
    if b is None or h is None or b == h:
        return []
    return [f"CPU allowance {b:g} → {h:g} cores"]


def causes(
    base: Sequence[RunView], head: Sequence[RunView], code: CodeChange, config: list[str] | None, slower: float = 0.0
) -> list[Cause]:
    """Every candidate cause, ranked (the module's order); the first is the explanation's top
    cause. `slower`: the total's move (head - base, s), which a host load must go along with."""
    found = [Cause("config", t) for t in config or []]
    found += [Cause("platform", t) for t in platform_changes(base, head)]
    found += [Cause("CPU allowance", t) for t in allowance_changes(base, head)]
    found += [Cause("host load", t) for t in host_load_changes(base, head, slower)]
    found += [Cause("node", t) for t in platform_changes(base, head, (("node", "node"),))]
    if not code.same:
        if code.files:
            more = f" (+{len(code.files) - 3} more)" if len(code.files) > 3 else ""
            found.append(Cause("code", ", ".join(code.biggest()) + more))
        elif code.unknown:
            found.append(Cause("code", f"{code.base[:7]} → {code.head[:7]} (files unknown: {code.unknown})"))
    return found
