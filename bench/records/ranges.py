"""The range rules of every number in run.json that a figure is computed from: one place.

The JSON Schema says what type a value has; these rules say what values it can take
(a price is not negative nor 1e308, a CPU limit is not -4 cores). `load_run` applies them
to every record it reads, so `bench check` names the same values that compare and report
then leave out: a refused value is removed from the record (the figure it feeds is
unknown, shown as "—"), never read as 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.records.contract import RUN_JSON, samples_name
from bench.records.strict_numbers import finite
from bench.records.trainclock import attempt_spans

MAX_RATE = 1e9  # no price, PUE or capital sum is larger: a bigger one is a typo or an overflow
MAX_CORES = 1e6
MAX_BYTES = 1e18


@dataclass(frozen=True)
class Rule:
    """`path` in run.json must hold a finite number in its range (`low` excluded when `open_low`)."""

    path: tuple[str, ...]
    low: float
    high: float
    what: str
    feeds: tuple[str, ...] = ()  # the figures (metric keys) that are unknown without it
    open_low: bool = False
    integer: bool = False

    def refuses(self, value: Any) -> bool:
        number = finite(value, self.low, self.high)
        if number is None or (self.integer and number != int(number)):
            return True
        return self.open_low and number == self.low

    def span(self) -> str:
        return f"{'(' if self.open_low else '['}{self.low:g}, {self.high:g}]"


COST = ("environment", "cost")
COST_KEYS = ("cost_usd", "cost_per_1000_images_usd")
CPU_KEYS = ("cpu_limit_cores", "cost_usd", "cost_per_1000_images_usd")
CGROUP = ("hardware", "cgroup")
RULES: tuple[Rule, ...] = (
    Rule((*COST, "usd_per_gpu_hour"), 0.0, MAX_RATE, "price per GPU-hour ($)", COST_KEYS),
    Rule((*COST, "usd_per_cpu_hour"), 0.0, MAX_RATE, "price per core-hour ($)", COST_KEYS),
    Rule((*COST, "electricity_usd_per_kwh"), 0.0, MAX_RATE, "electricity price ($/kWh)", COST_KEYS),
    Rule((*COST, "pue"), 1.0, 100.0, "power usage effectiveness", COST_KEYS),
    Rule((*COST, "node_capex_usd"), 0.0, MAX_RATE, "capital per node ($)", COST_KEYS),
    Rule((*COST, "node_life_years"), 0.0, 100.0, "node life (years)", COST_KEYS, open_low=True),
    Rule((*COST, "utilisation"), 0.0, 1.0, "utilisation (a fraction)", COST_KEYS, open_low=True),
    Rule((*COST, "gpus_per_node"), 0.0, 1024.0, "GPUs per node", COST_KEYS, integer=True),
    Rule((*CGROUP, "cpu_limit_cores"), 0.0, MAX_CORES, "CPU limit (cores)", CPU_KEYS, open_low=True),
    Rule((*CGROUP, "memory_limit_bytes"), 0.0, MAX_BYTES, "memory limit (bytes)", ("mem_limit_gb",), open_low=True),
    Rule(("hardware", "cpu_cores_logical"), 0.0, MAX_CORES, "logical cores", (), open_low=True, integer=True),
    Rule(("hardware", "cpu_cores_physical"), 0.0, MAX_CORES, "physical cores", open_low=True, integer=True),
    Rule(
        ("hardware", "cpu_affinity_cores"),
        0.0,
        MAX_CORES,
        "cores the job may use",
        CPU_KEYS,
        open_low=True,
        integer=True,
    ),
    Rule(("hardware", "memory_bytes"), 0.0, MAX_BYTES, "memory (bytes)", ("host_mem_gb",), open_low=True),
    Rule(("scheduler", "queue_wait_s"), 0.0, 1e9, "queue wait (s)", ("queue_wait_s",)),
    Rule(("scheduler", "queue_wait_total_s"), 0.0, 1e9, "queue wait over every attempt (s)", ("queue_wait_s",)),
)


def _parent(meta: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any] | None:
    node: Any = meta
    for key in path[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


def refuse_out_of_range(meta: dict[str, Any], refused: dict[str, str] | None = None) -> list[str]:
    """Apply every rule to `meta` in place: a value out of its range is removed and named;
    `refused` gets, for each figure it feeds, the reason that figure is unknown."""
    out: list[str] = []
    for rule in RULES:
        parent = _parent(meta, rule.path)
        key = rule.path[-1]
        if parent is None or parent.get(key) is None:
            continue
        value = parent[key]
        if rule.refuses(value):
            del parent[key]
            shown = str(value)[:40]
            line = (
                f"{RUN_JSON}: {'.'.join(rule.path)} = {shown} is not a number in {rule.span()} ({rule.what}); "
                "refused: what it feeds is unknown"
            )
            out.append(line)
            for key in rule.feeds:
                if refused is not None:
                    refused.setdefault(key, line)
    return out


def overlapping_attempts(meta: dict[str, Any]) -> list[str]:
    """Attempts are paid for one after another: two that overlap would be charged twice."""
    known = sorted((s, e) for s, e in attempt_spans(meta) if s is not None and e is not None and e >= s)
    overlaps = sum(1 for (_, e1), (s2, _) in zip(known, known[1:]) if s2 < e1)
    if not overlaps:
        return []
    return [
        f"{RUN_JSON}: {overlaps} attempt(s) overlap the one before (previous_attempts times wrong?); "
        "the overlap is charged once"
    ]


def named_samples_files(meta: dict[str, Any]) -> set[str] | None:
    """The samples files run.json accounts for: one per host it names (this attempt's and
    earlier ones') and its `samples_file`; None when it names no host (an import)."""
    previous = meta.get("previous_attempts")
    hosts: list[Any] = []
    for part in [*(previous if isinstance(previous, list) else []), meta]:
        if isinstance(part, dict) and isinstance(part.get("hosts"), list):
            hosts += part["hosts"]
    names = {samples_name(h) for h in hosts if isinstance(h, str)}
    if not names:
        return None
    if isinstance(meta.get("samples_file"), str):
        names.add(meta["samples_file"])
    return names


def cost_inputs_missing(meta: dict[str, Any], refused: dict[str, str] | None = None) -> list[str]:
    """A per-core price with no core count in run.json: the cost is unknown, never the GPU part alone."""
    env = meta.get("environment")
    cost = env.get("cost") if isinstance(env, dict) else None
    if not isinstance(cost, dict) or cost.get("model") != "cloud" or not cost.get("usd_per_cpu_hour"):
        return []
    hw = meta.get("hardware") if isinstance(meta.get("hardware"), dict) else {}
    cg = hw.get("cgroup") if isinstance(hw.get("cgroup"), dict) else {}
    if any(isinstance(src.get(k), (int, float)) for src, k in ((cg, "cpu_limit_cores"), (hw, "cpu_affinity_cores"))):
        return []
    line = (
        f"{RUN_JSON}: hardware names no CPU allowance (cgroup limit or affinity cores), which the per-core "
        "price needs; cost unknown (not $0)"
    )
    if refused is not None:
        for key in COST_KEYS:
            refused.setdefault(key, line)
    return [line]
