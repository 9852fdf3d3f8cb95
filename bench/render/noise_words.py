"""The noise floor and the minimum detectable effect in words (PR comment, report, `bench noise`).

What the floor is and how it is measured: bench.analysis.noise; where it is stored:
bench.analysis.noise_store. Here only the sentences: every number, the floor's multiple
of the CV and the power included, comes in with the data (render/ decides nothing).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from bench.analysis.metrics import METRIC_BY_KEY
from bench.render.escape import code, md


def _label(key: str) -> str:
    m = METRIC_BY_KEY.get(key)
    return m.label if m is not None else key


def floor_sentence(floors: Mapping[str, Any], source: str) -> str:
    """ "Noise floor (1.96 × the CV …, from …): images/s ±4.1 %, …" or "" without floors
    (`floors`: metric -> bench.analysis.noise.Floor)."""
    if not floors:
        return ""
    z = next(iter(floors.values())).z
    parts = ", ".join(f"{_label(k)} ±{f.floor:.1%}" for k, f in floors.items())
    return f"Noise floor ({z:g} × the CV of one commit's runs, from {source}): {parts}"


def detectable_sentence(detectable: Mapping[str, float], runs: int, power: float, floors: bool = False) -> str:
    """ "Minimum detectable effect with 6 runs a side (found with 80% power …): …" or "".

    With a floor but no effect (`floors` and an empty `detectable`), the runs are too few for
    the smallest p they can reach to pass the level the metrics are judged at: said so."""
    if not detectable:
        if floors and runs > 1:  # one run a side: no test is made at all, nothing to say
            return (
                f"Minimum detectable effect with {runs} run{'s' * (runs != 1)} a side: none "
                "(too few runs for the smallest possible p to reach the level a lone change is judged at)"
            )
        return ""
    parts = ", ".join(f"{_label(k)} {d:.1%}" for k, d in detectable.items())
    return (
        f"Minimum detectable effect with {runs} run{'s' * (runs != 1)} a side "
        f"(found with {power:.0%} power, never below the floor): {parts}"
    )


def pair_verdict(noise: Any) -> str:
    """The Differences verdict of a pair within noise (bench.analysis.pair_noise.PairNoise)."""
    return f"within noise (±{noise.floor:.1%}, {md(noise.env)}'s noise floor, the larger of the two): no winner"


def pair_detectable(noise: Any, runs: int, family: int) -> str:
    """What `runs` a side could have found, for a pair beyond its floor that is not clear
    (bench.analysis.pair_noise.PairNoise); "" where nothing is known."""
    if noise is None or noise.within:
        return ""
    cv = f"{md(noise.env)}'s CV {noise.cv:.1%}"
    if noise.detectable is not None:
        return (
            f"; minimum detectable effect with {runs} run{'s' * (runs != 1)} a side: {noise.detectable:.1%} "
            f"({noise.power:.0%} power, {cv})"
        )
    if noise.needed is not None and runs > 1:
        level = f"a lone change among {family} metrics" if family > 1 else "a change"
        return (
            f"; minimum detectable effect with {runs} runs a side: none (too few for the smallest possible p "
            f"to reach the level {level} is judged at); {noise.needed} runs a side find a difference of this "
            f"size ({noise.power:.0%} power, {cv})"
        )
    return ""


def report_lines(noise: Iterable[Any]) -> list[str]:
    """The report's "Noise floor" lines (bench.analysis.noise_store.EnvNoise per environment):
    its floor and what its runs can find, a damaged or stale file first."""
    lines = []
    for n in noise:
        if n.problem:
            lines.append(md(n.problem, 600))
        said = [floor_sentence(n.floors, n.source), detectable_sentence(n.detectable, n.runs, n.power, bool(n.floors))]
        said = [x for x in said if x]
        if said:
            lines.append(f"{md(n.env)}: " + "; ".join(md(x, 1200) for x in said) + ".")
        else:
            lines.append(
                f"{md(n.env)}: no noise floor (no commit has three runs of this experiment); "
                f"`bench noise --env {code(n.env)} --runs 3` measures one."
            )
    return lines


def floors_table(measured: Iterable[Any], path: Path, z: float) -> str:
    """`bench noise`'s table (bench.analysis.noise.Measured per experiment): per metric the
    CV, the floor (`z` × CV) and the runs and median behind it."""
    lines = [f"noise floor written to {path} (floor = {z:g} x CV of one commit's runs)"]
    for m in measured:
        lines.append(f"{m.env} / {m.experiment}: {sum(m.commits.values())} runs of {len(m.commits)} commit(s)")
        lines.append(f"  {'metric':<28} {'CV':>8} {'floor':>8} {'runs':>5} {'median':>12}")
        for k, f in sorted(m.floors.items()):
            lines.append(f"  {k:<28} {f.cv:>8.2%} {'±' + format(f.floor, '.1%'):>8} {f.runs:>5} {f.median:>12.4g}")
    return "\n".join(lines)


def proposed_bands_yaml(env: str, bands: Mapping[str, Mapping[str, Any]], measured: Iterable[Any], z: float) -> str:
    """`bands` (experiment -> metric -> {value, lower, upper}: bench.analysis.noise.propose_bands)
    as clusters/<env>/expected.yaml text, with a header saying where they came from."""
    import yaml

    head = [
        f"# Proposed bands for clusters/{env}/expected.yaml (bench noise --propose-bands): value = the median",
        f"# of the runs measured, lower/upper = -/+ {z:g} x their CV. Review, then commit the file in a PR.",
    ]
    for m in measured:
        head.append(f"# {m.experiment}: {sum(m.commits.values())} runs of {len(m.commits)} commit(s)")
    data = {x: dict(b) for x, b in bands.items() if b}
    return "\n".join(head) + "\n" + yaml.safe_dump(data, sort_keys=True, default_flow_style=None)
