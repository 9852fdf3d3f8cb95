"""Read, select and compare: the one path from a results tree to the numbers a command shows.

`bench compare` and `bench report` call `select_and_compare` (one commit's runs, or the
exact run folders `bench demo` just made, compared across environments); the PR comment
calls `compare_pr` (each environment's runs at the PR head against its own runs at the
merge-base). `select_and_compare` selects from the run index (bench.analysis.run_index)
and reads whole records (`RunData`) only for the runs it selected, so its cost follows the
runs it shows, not the size of the tree; it selects with bench.records.select and
compares with bench.analysis; bench/render/ only draws what they return.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from bench.analysis.comparable import own_reason
from bench.analysis.compare import CompareResult, compare_runs
from bench.analysis.run_index import IndexedRun, load_records, read_index, run_dirs
from bench.errors import AtlasError
from bench.records.read import RunData, find_runs
from bench.records.select import same_commit, select_runs

if TYPE_CHECKING:
    from bench.analysis.noise_store import Floors


@dataclass(frozen=True)
class Selected:
    """What a comparison covered: the commit, its runs, every run's index entry, and the numbers."""

    sha: str | None
    runs: list[RunData]  # the selected runs (compared or listed as excluded), read whole
    index: list[IndexedRun]  # every run of the results tree (the report's history chart)
    result: CompareResult


def _no_runs(results: Path, envs: list[str] | None, found: list, present: list[str], hint: str) -> None:
    """One clear error when the tree (or the environments asked for) has no run."""
    if not found and envs and present:
        missing = sorted(set(envs) - set(present))
        raise AtlasError(
            f"no runs of environment {', '.join(missing)} under {results}; it has runs of "
            f"{', '.join(present)}: check the --env name (or run `bench run --env {missing[0]}` first)"
        )
    if not found:
        raise AtlasError(f"no runs under {results} (expected {results}/<env>/<run_id>/run.json); {hint}")


def read_runs(results: Path, envs: list[str] | None = None, hint: str = "run `bench run` first") -> list[RunData]:
    """Every run of the results tree (of `envs`), read once; one clear error when there is none."""
    runs = find_runs(Path(results), envs or None)
    if not runs and envs:
        _no_runs(results, envs, runs, sorted({r.env for r in find_runs(Path(results))}), hint)
    _no_runs(results, envs, runs, [], hint)
    return runs


def read_indexed(results: Path, envs: list[str] | None = None, hint: str = "run `bench run` first") -> list[IndexedRun]:
    """Every run of the results tree (of `envs`) as its index entry; one clear error when there is none."""
    index = read_index(Path(results), envs or None)
    if not index and envs:
        _no_runs(results, envs, index, sorted({env for env, _ in run_dirs(Path(results))}), hint)
    _no_runs(results, envs, index, [], hint)
    return index


def select_and_compare(
    results: Path,
    envs: list[str] | None = None,
    commit: str | None = None,
    only: set[Path] | None = None,
    allow_different: bool = False,
    baseline: str | None = None,
    allow_dirty: bool = False,
    index: list[IndexedRun] | None = None,
    meanwhile: Callable[[], object] | None = None,
) -> Selected:
    """One commit's runs (or exactly the run folders in `only`) compared across environments.

    Selected from the run index; only the selected runs are read whole, once, while this
    process runs `meanwhile()` (run_index.load_records). `index`: the tree's index already
    read (a report of each commit reads it once)."""
    if index is None:
        index = read_indexed(results, envs, "run `bench run` or `bench collect` first")
    sha, chosen = select_runs(index, commit, only, Path(results))
    runs = load_records(chosen, meanwhile)
    result = compare_runs(runs, allow_different=allow_different, baseline=baseline, allow_dirty=allow_dirty)
    return Selected(sha, runs, index, result)


@dataclass(frozen=True)
class EnvVerdicts:
    """One environment in the PR comment: how many runs a side, and a verdict per judged metric."""

    env: str
    head_runs: int
    base_runs: int
    verdicts: list  # bench.analysis.regression.Verdict, in the headline metrics' order
    floors: dict = field(default_factory=dict)  # metric -> bench.analysis.noise.Floor (the noise floor used)
    floor_source: str = ""  # where the floors came from (noise.json or the history)
    detectable: dict = field(default_factory=dict)  # metric -> the smallest change these runs find (noise.detectable)
    power: float = 0.8  # the power `detectable` is found with (sample_size.POWER)


def pr_sides(runs: list[RunData], env: str, head: str, base: str) -> dict[str, list[RunData]]:
    """The PR comment's two sides of one environment: its successful, clean, intact runs at
    the PR head and at the merge-base (bench.analysis.comparable's own reasons exclude the rest)."""
    sides: dict[str, list[RunData]] = {"base": [], "head": []}
    for r in runs:
        side = "head" if same_commit(r.git_sha, head) else "base" if same_commit(r.git_sha, base) else None
        if r.env == env and side and not own_reason(r, allow_dirty=False):
            sides[side].append(r)
    return sides


def read_pr_runs(results: Path, envs: list[str] | None = None) -> list[RunData]:
    """The PR comment's runs, read once (verdicts and the expected-band flags use them)."""
    return read_runs(results, envs, "run `bench run` at the PR head and at the merge-base first")


def compare_pr(
    runs: list[RunData],
    head: str,
    base: str,
    thresholds: Mapping[str, float] | None = None,
    results: Path | None = None,
    problems: list[str] | None = None,
) -> list[EnvVerdicts]:
    """Per environment, its runs at the PR head judged against its own runs at the merge-base;
    one environment's metrics are one family for the Benjamini–Hochberg adjustment, and a
    change below the environment's noise floor (noise_floors: results/<env>/noise.json where
    sound, else the runs at hand) reads "within noise". `problems` gets one line per
    damaged or stale noise.json."""
    from bench.analysis.metrics import run_metrics
    from bench.analysis.noise import detectable
    from bench.analysis.regression import adjust_family, judge, pr_family, within_noise
    from bench.analysis.sample_size import POWER

    out = []
    for env in sorted({r.env for r in runs}):
        chosen = pr_sides(runs, env, head, base)
        sides = {side: [run_metrics(r).as_dict() for r in side_runs] for side, side_runs in chosen.items()}
        verdicts = []
        for key in pr_family():
            base_vals, head_vals = [row[key] for row in sides["base"]], [row[key] for row in sides["head"]]
            if all(v is None for v in base_vals + head_vals):
                continue  # nobody measured it here (e.g. GPU figures on a CPU runner)
            verdicts.append(judge(env, key, base_vals, head_vals, threshold=(thresholds or {}).get(key, 0.05)))
        experiment = next((str(r.meta.get("experiment")) for r in chosen["head"] + chosen["base"]), "")
        found = noise_floors(runs, env, experiment, list(pr_family()), results, (head, base))
        if found.problem and problems is not None:
            problems.append(found.problem)
        floors = {k: f.floor for k, f in found.floors.items()}
        judged = within_noise(adjust_family(verdicts), floors)
        n = min(len(sides["head"]), len(sides["base"]))
        family = sum(v.family > 0 for v in judged) or 1
        mde = {k: d for k, f in found.floors.items() if (d := detectable(f.cv, n, family)) is not None}
        counts = len(sides["head"]), len(sides["base"])
        out.append(EnvVerdicts(env, *counts, judged, found.floors, found.source, mde, POWER))
    return out


def noise_floors(
    runs: list[RunData],
    env: str,
    experiment: str,
    figures: list[str],
    results: Path | None = None,
    judged: tuple[str, ...] = (),
) -> Floors:
    """`env`'s noise floors for `experiment` (bench.analysis.noise_store.floors_of): the
    stored results/<env>/noise.json where it is sound and current, else the coefficient of
    variation of the runs at hand, pooled over the commits with two or more."""
    from bench.analysis.history import run_entry
    from bench.analysis.noise_store import floors_of

    return floors_of(results, env, experiment, [run_entry(r) for r in runs if r.env == env], figures, judged)
