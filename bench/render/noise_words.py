"""The noise floor and the minimum detectable effect in words (PR comment, report, `bench noise`).

What the floor is and how it is measured: bench.analysis.noise; where it is stored:
bench.analysis.noise_store. Here only the sentences.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from bench.analysis.metrics import METRIC_BY_KEY
from bench.analysis.noise import BAND_Z, NOISE_Z, Floor, Measured, propose_bands
from bench.analysis.noise_store import EnvNoise
from bench.analysis.sample_size import POWER


def _label(key: str) -> str:
    m = METRIC_BY_KEY.get(key)
    return m.label if m is not None else key


def floor_sentence(floors: Mapping[str, Floor], source: str) -> str:
    """ "Noise floor (from …): images/s ±4.1 %, …" or "" without floors."""
    if not floors:
        return ""
    parts = ", ".join(f"{_label(k)} ±{f.floor:.1%}" for k, f in floors.items())
    return f"Noise floor ({NOISE_Z:g} × the CV of one commit's runs, from {source}): {parts}"


def detectable_sentence(detectable: Mapping[str, float], runs: int) -> str:
    """ "With 6 runs a side the smallest change found with 80 % power: …" or "" without one."""
    if not detectable:
        return ""
    parts = ", ".join(f"{_label(k)} {d:.1%}" for k, d in detectable.items())
    return (
        f"Minimum detectable effect with {runs} run{'s' * (runs != 1)} a side "
        f"(found with {POWER:.0%} power, never below the floor): {parts}"
    )


def floors_table(measured: Iterable[Measured], path: Path) -> str:
    """`bench noise`'s table: per experiment and metric, the CV, the floor and the runs behind it."""
    lines = [f"noise floor written to {path} (floor = {NOISE_Z:g} x CV of one commit's runs)"]
    for m in measured:
        lines.append(f"{m.env} / {m.experiment}: {sum(m.commits.values())} runs of {len(m.commits)} commit(s)")
        lines.append(f"  {'metric':<28} {'CV':>8} {'floor':>8} {'runs':>5} {'median':>12}")
        for k, f in sorted(m.floors.items()):
            lines.append(f"  {k:<28} {f.cv:>8.2%} {'±' + format(f.floor, '.1%'):>8} {f.runs:>5} {f.median:>12.4g}")
    return "\n".join(lines)


def proposed_bands_yaml(env: str, measured: Iterable[Measured], metrics: Iterable[str]) -> str:
    """The bands `bench noise --propose-bands` prints, as clusters/<env>/expected.yaml text
    (bench.analysis.expected's format) with a header saying where they came from."""
    import yaml

    metrics = list(metrics)
    data = {m.experiment: bands for m in measured if (bands := propose_bands(m, metrics))}
    head = [
        f"# Proposed bands for clusters/{env}/expected.yaml (bench noise --propose-bands): value = the median",
        f"# of the runs measured, lower/upper = -/+ {BAND_Z:g} x their CV. Review, then commit the file in a PR.",
    ]
    for m in measured:
        head.append(f"# {m.experiment}: {sum(m.commits.values())} runs of {len(m.commits)} commit(s)")
    return "\n".join(head) + "\n" + yaml.safe_dump(data, sort_keys=True, default_flow_style=None)


def report_lines(noise: Iterable[EnvNoise]) -> list[str]:
    """The report's "Noise floor" lines: per environment its floor and what its runs can find."""
    from bench.render.escape import code, md

    lines = []
    for n in noise:
        if n.problem:
            lines.append(md(n.problem, 600))
        said = [x for x in (floor_sentence(n.floors, n.source), detectable_sentence(n.detectable, n.runs)) if x]
        if said:
            lines.append(f"{md(n.env)}: " + "; ".join(md(x, 1200) for x in said) + ".")
        else:
            lines.append(
                f"{md(n.env)}: no noise floor (no commit has three runs of this experiment); "
                f"`bench noise --env {code(n.env)} --runs 3` measures one."
            )
    return lines
