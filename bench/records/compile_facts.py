"""What became of the compiled fast path in a run, from its `warmup` events.

The workload proves its compiled steps on the first real batch and trains eagerly when
they disagree with eager ones (workflows/biggan/compile_guard.py). A run that fell back
is slower for a reason that is not the platform's, so its record says so: run.json
carries these facts under `compile`, and `compile_problems` names a fallback for
`bench check` and the report.
"""

from __future__ import annotations

from typing import Any

from bench.records.trainlog import TrainLog

KEYS = (
    "compile",
    "compile_requested",
    "compile_guard",
    "graph_breaks",
    "recompiles",
    "compiled_graphs",
    "compile_mode",
    "precision",
    "flops_per_g_iteration",
    "images_per_g_iteration",
)


def _count(value: Any, low: int = 0, high: float = 1e21) -> int | None:
    """A whole number within run.schema.json's bounds for the same key, else None (unknown, not a guess)."""
    ok = isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
    return value if ok else None


def compile_facts(log: TrainLog) -> dict[str, Any] | None:
    """The run's compile facts (every start: the worst guard, the most breaks), or None without a warmup event."""
    starts = log.of("warmup")
    if not starts:
        return None
    last = starts[-1]
    facts = {k: last.get(k) for k in KEYS}
    refused = [w for w in starts if w.get("compile_requested") and w.get("compile_guard") != "passed"]
    if refused:
        facts["compile"] = False
        facts["compile_guard"] = str(refused[0].get("compile_guard") or "unknown")
    for key in ("graph_breaks", "recompiles"):
        counts = [c for w in starts if (c := _count(w.get(key))) is not None]
        facts[key] = max(counts) if counts else None
    facts["flops_per_g_iteration"] = _count(facts["flops_per_g_iteration"], 1)
    facts["images_per_g_iteration"] = _count(facts["images_per_g_iteration"], 1, 1e7)
    return facts


def run_compile_facts(meta: dict[str, Any], log: TrainLog) -> dict[str, Any] | None:
    """run.json's `compile` section, else the same facts read from train.jsonl (older records)."""
    facts = meta.get("compile")
    return facts if isinstance(facts, dict) else compile_facts(log)


def fell_back(facts: dict[str, Any] | None) -> bool:
    return bool(facts) and bool(facts.get("compile_requested")) and facts.get("compile_guard") != "passed"


def compile_problems(meta: dict[str, Any], log: TrainLog) -> list[str]:
    """One line when the run asked for torch.compile and trained eagerly instead."""
    facts = run_compile_facts(meta, log)
    if not fell_back(facts):
        return []
    return [
        f"compiled fast path refused, the run trained eagerly (compile_guard: {facts.get('compile_guard')}); "
        "its speed is not the compiled path's: compare it with eager runs only, or fix the compiler and run again"
    ]
