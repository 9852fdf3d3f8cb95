"""The noise floor and the minimum detectable effect in words (PR comment, report, `bench noise`).

What the floor is and how it is measured: bench.analysis.noise; where it is stored:
bench.analysis.noise_store. Here only the sentences.
"""

from __future__ import annotations

from collections.abc import Mapping

from bench.analysis.metrics import METRIC_BY_KEY
from bench.analysis.noise import NOISE_Z, Floor
from bench.analysis.sample_size import POWER


def _label(key: str) -> str:
    m = METRIC_BY_KEY.get(key)
    return m.label if m is not None else key


def floor_sentence(floors: Mapping[str, Floor], source: str) -> str:
    """"Noise floor (from …): images/s ±4.1 %, …" or "" without floors."""
    if not floors:
        return ""
    parts = ", ".join(f"{_label(k)} ±{f.floor:.1%}" for k, f in floors.items())
    return f"Noise floor ({NOISE_Z:g} × the CV of one commit's runs, from {source}): {parts}"


def detectable_sentence(detectable: Mapping[str, float], runs: int) -> str:
    """"With 6 runs a side the smallest change found with 80 % power: …" or "" without one."""
    if not detectable:
        return ""
    parts = ", ".join(f"{_label(k)} {d:.1%}" for k, d in detectable.items())
    return (
        f"Minimum detectable effect with {runs} run{'s' * (runs != 1)} a side "
        f"(found with {POWER:.0%} power, never below the floor): {parts}"
    )
