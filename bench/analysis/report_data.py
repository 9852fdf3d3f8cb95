"""Everything a report shows that is a decision, built in one place: `build_report_data`.

Which runs were compared and how they compare, the headline's figures, which run draws
each environment's charts, the advice, the provenance, the history and its change points,
the figures outside their expected band, the cross-checks, the busy runs and the identity
rows. bench/render/ draws a `ReportData` and decides none of it; `bench compare` and the
report's Summary draw the same `Headline`, so the two never disagree.
"""

from __future__ import annotations

import hashlib
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.analysis.advisor import advise
from bench.analysis.comparable import Excluded
from bench.analysis.compare import (
    CLOCK_RESOLUTION_S,
    RESOLUTION_FACTOR,
    SIGNIFICANT_P,
    CompareResult,
    PairResult,
    PhaseGap,
    phase_gaps,
)
from bench.analysis.contention import BusyEffect, busy_runs, contended, with_and_without
from bench.analysis.crosscheck import Finding, cross_check_runs
from bench.analysis.expected import Outside, outside
from bench.analysis.explain_causes import CodeChange
from bench.analysis.history import chart_points
from bench.analysis.identity import identity_rows, machine, scaling_rows
from bench.analysis.metrics import HEADLINE
from bench.analysis.pair_noise import apply_floors
from bench.analysis.provenance import provenance
from bench.analysis.report_history import ChangeNote, change_notes, history_entries
from bench.analysis.run_index import IndexedRun
from bench.analysis.select_compare import Selected, select_and_compare
from bench.analysis.stats import BOOTSTRAP_RESAMPLES, Comparison
from bench.analysis.time_sums import env_lacked
from bench.records.read import RunData

# The types render/ draws, named here so that render/ imports this module only (and the
# metric catalogue's labels and `fmt`): tests/bench/test_import_layers.py.
__all__ = [
    "CLOCK_RESOLUTION_S",
    "RESOLUTION_FACTOR",
    "SIGNIFICANT_P",
    "Excluded",
    "Busy",
    "BusyEffect",
    "ChartPicks",
    "Comparison",
    "CompareResult",
    "Headline",
    "PairResult",
    "PhaseGap",
    "ReportData",
    "build_report_data",
    "headline",
    "read_report_data",
    "utc",
]


@dataclass(frozen=True)
class Headline:
    """The Summary's figures: the comparison, per environment its phase gaps to the baseline,
    the note on compiled and eager runs mixed, and (one environment only) its medians."""

    result: CompareResult
    gaps: dict[str, list[PhaseGap]]
    compile_notes: list[str]
    single_env: list[tuple[str, int, float | None, float | None]]  # (env, runs, images/s, time to train s)


@dataclass(frozen=True)
class Busy:
    """Runs whose host was busy with other work: (env, run, why), per environment how many
    of how many, and each headline figure's median with and without them."""

    runs: list[tuple[str, str, str]]
    per_env: list[tuple[str, int, int]]
    effects: list[BusyEffect]


@dataclass(frozen=True)
class ChartPicks:
    """Which run draws each environment's charts: per env its compared runs from the median
    images/s outwards (`order`), each with its images/s (`rated`), the median run (`median`)."""

    order: dict[str, list[RunData]]
    rated: dict[str, list[tuple[str, float | None]]]
    median: dict[str, str | None]
    bars: dict[str, dict[str, list[float]]]  # summary chart: metric -> env -> per-run values
    below: dict[str, dict[str, Any]]
    lacked: dict[str, dict[str, str]]
    history: list  # bench.analysis.history.chart_points


@dataclass(frozen=True)
class ReportData:
    name: str  # the report's folder: <date>-<short sha>[-<content hash>]
    sha: str | None
    runs: list[RunData]  # every selected run (compared or excluded)
    chosen: list[RunData]  # the compared ones
    results_name: str
    starts: list[float]
    headline: Headline
    busy: Busy
    picks: ChartPicks
    branch_read: bool  # the history includes the results branch's entries
    advice: dict[str, list[str]]
    provenance: list[tuple[str, list[list[str | None]]]]
    identity: list[tuple[str, str, list[str]]]
    scaling: list[tuple[str, int, float, float, float]]
    outside: list[Outside]
    changes: list[ChangeNote]
    crosscheck: list[Finding]
    problems: list[tuple[str, list[str]]]  # (env/run, problems) as `bench check` prints them
    cost_notes: list[tuple[str, str]]
    dirty: bool
    resamples: int = BOOTSTRAP_RESAMPLES
    summary: dict[str, Any] = field(default_factory=dict)  # summary.json
    noise: list = field(default_factory=list)  # bench.analysis.noise_store.EnvNoise per environment

    @property
    def result(self) -> CompareResult:
        return self.headline.result


def utc(t: float | None, fmt_: str = "%Y-%m-%d %H:%M") -> str:
    return time.strftime(fmt_, time.gmtime(t)) if t is not None else "unknown"


def headline(result: CompareResult) -> Headline:
    """The Summary's figures of one comparison (the report's and `bench compare`'s)."""
    base = result.baseline
    gaps = {e: phase_gaps(result, e, base) for e in result.envs if base is not None and e != base}
    single = [
        (
            e,
            result.summaries[e].runs,
            result.summaries[e].median["images_per_s"],
            result.summaries[e].median["time_to_train_s"],
        )
        for e in result.envs
    ]
    return Headline(result, gaps, result.compile_notes, single if len(result.envs) == 1 else [])


def representative(runs: list[RunData], result: CompareResult) -> dict[str, RunData]:
    """Per env, the run with the median images/s (else the first run with samples)."""
    metrics = {(m.env, m.run_id): m for m in result.runs}
    out: dict[str, RunData] = {}
    for env in result.envs:
        mine = [r for r in runs if r.env == env]
        rated = sorted(
            (metrics[(env, r.run_id)].images_per_s, r.run_id, r)
            for r in mine
            if metrics[(env, r.run_id)].images_per_s is not None
        )
        if rated:
            out[env] = rated[(len(rated) - 1) // 2][2]
        else:
            with_samples = [r for r in mine if r.samples or r.train.events]
            if with_samples:
                out[env] = with_samples[0]
    return out


def chart_order(runs: list[RunData], result: CompareResult) -> dict[str, list[RunData]]:
    """Per env, its compared runs ordered from the median images/s outwards: a chart
    takes the first that recorded its series, so no environment is dropped because the
    median run happens to lack it."""
    rep = representative(runs, result)
    ips = {(m.env, m.run_id): m.images_per_s for m in result.runs}
    out: dict[str, list[RunData]] = {}
    for env in result.envs:
        first = rep.get(env)
        centre = ips.get((env, first.run_id)) if first is not None else None
        ranked = []
        for r in (r for r in runs if r.env == env):
            v = ips.get((env, r.run_id))
            far = abs(v - centre) if v is not None and centre is not None else float("inf")
            ranked.append((r is not first and centre is not None, far, r.run_id, r))  # none rated: by run id
        out[env] = [t[-1] for t in sorted(ranked, key=lambda t: t[:3])]
    return out


def _picks(chosen: list[RunData], result: CompareResult, entries: list[dict]) -> ChartPicks:
    order = chart_order(chosen, result)
    rep, ips = representative(chosen, result), {(m.env, m.run_id): m.images_per_s for m in result.runs}
    rated = {e: [(r.run_id, ips.get((e, r.run_id))) for r in rs] for e, rs in order.items()}
    median = {e: r.run_id if (r := rep.get(e)) and ips.get((e, r.run_id)) is not None else None for e in order}
    bars = {
        k: {env: [v for m in result.runs if m.env == env and (v := getattr(m, k)) is not None] for env in result.envs}
        for k in HEADLINE
    }
    s = result.summaries
    below = {k: {e: s[e].below[k] for e in result.envs if k in s[e].below} for k in HEADLINE}
    lacked = {k: {e: x for e in result.envs if (x := env_lacked(result.runs, e, k))} for k in HEADLINE}
    return ChartPicks(order, rated, median, bars, below, lacked, chart_points(entries, result.envs))


def content_hash(runs: list[RunData]) -> str:
    """10 hex digits of a sha256 over the runs' env, id and record files (regular files
    only: a link or a FIFO planted in a results tree is never followed or read)."""
    h = hashlib.sha256()
    for r in sorted(runs, key=lambda r: (r.env, r.run_id)):
        h.update(f"{r.env}/{r.run_id}\n".encode())
        for f in sorted(r.path.iterdir()) if r.path.is_dir() and not r.path.is_symlink() else []:
            if not stat.S_ISREG(f.lstat().st_mode):
                continue
            with f.open("rb") as fh:
                h.update(f.name.encode() + b"\0" + hashlib.file_digest(fh, "sha256").digest())
    return h.hexdigest()[:10]


def report_name(runs: list[RunData], sha: str | None) -> str:
    """<date>-<short sha> from the runs themselves, never from "now"; where date or sha is
    unknown (imports, records without git), the runs' own bytes tell reports apart."""
    starts = [r.start_time for r in runs if r.start_time is not None]
    name = f"{utc(max(starts), '%Y-%m-%d') if starts else 'undated'}-{sha[:7] if sha else 'nogit'}"
    return name + (f"-{content_hash(runs)}" if not starts or not sha else "")


def _dirty(run: RunData) -> bool:
    git = run.meta.get("git")
    return isinstance(git, dict) and git.get("dirty") is True


def build_report_data(
    selected: Selected,
    results: Path,
    history: list[dict] | None = None,
    code_of: Callable[[str, str], CodeChange] | None = None,
) -> ReportData:
    """Every decision of one report over `selected` (bench.analysis.select_compare); the
    history chart and change points use every run of the results folder's index and the
    `history` entries of the results branch (None: no results branch); `code_of(base, head)`:
    the files changed between two commits, for the change points' explanations."""
    sha, runs, result = selected.sha, selected.runs, selected.result
    compared = {(m.env, m.run_id) for m in result.runs}
    chosen = [r for r in runs if (r.env, r.run_id) in compared]
    starts = [r.start_time for r in runs if r.start_time is not None]
    entries = history_entries(selected.index, result.envs, history)
    busy = busy_runs(result)
    name = report_name(runs, sha)
    experiment = {(r.env, r.run_id): r.meta.get("experiment") for r in chosen}
    problems = [
        (f"{r.env}/{r.run_id}", list(r.problems)) for r in sorted(runs, key=lambda r: (r.env, r.run_id)) if r.problems
    ]
    noise = _noise(results, entries, result)
    apply_floors(result.pairs, noise)  # the Differences are held to the floors the Noise floor section states
    return ReportData(
        name=name,
        sha=sha,
        runs=runs,
        chosen=chosen,
        results_name=Path(results).name,
        starts=starts,
        headline=headline(result),
        busy=Busy(
            [(m.env, m.run_id, why) for m in result.runs if (why := contended(m))],
            [(env, len(rs), sum(m.env == env for m in result.runs)) for env, rs in busy.items()],
            with_and_without(result),
        ),
        picks=_picks(chosen, result, entries),
        branch_read=history is not None,
        advice=dict(sorted(advise(result).items())),
        provenance=provenance(runs, result.envs),
        identity=identity_rows(chosen, result.envs, result.runs),
        scaling=scaling_rows(result.runs),
        outside=outside([(m.env, m.run_id, experiment.get((m.env, m.run_id)), m.values) for m in result.runs]),
        changes=change_notes(entries, result.experiment, Path(results), code_of),
        crosscheck=cross_check_runs(chosen),
        problems=problems,
        cost_notes=[
            (env, "; ".join(sorted({m.cost_note for m in result.runs if m.env == env}))) for env in result.envs
        ],
        dirty=any(_dirty(r) for r in chosen),
        summary={
            "folder": name,
            "commit": sha,
            "envs": result.envs,
            "runs": len(runs),
            "experiment": [result.experiment] if result.experiment else [],
            "problems": sum(len(p) for _, p in problems),
            "images_per_s": {e: result.summaries[e].median["images_per_s"] for e in result.envs},
            "time_to_train_s": {e: result.summaries[e].median["time_to_train_s"] for e in result.envs},
            "first_start": min(starts) if starts else None,
            "machines": {e: machine(chosen, result.runs, e) for e in result.envs},
        },
        noise=noise,
    )


def _noise(results: Path, entries: list[dict], result: CompareResult) -> list:
    """Each compared environment's noise floor (results/<env>/noise.json where sound, else
    its history) and what its runs at hand can find (bench.analysis.noise_store.env_noise)."""
    from bench.analysis.noise_store import env_noise
    from bench.analysis.regression import pr_family

    runs = {env: sum(m.env == env for m in result.runs) for env in result.envs}
    return env_noise(Path(results), entries, runs, result.experiment or "", list(pr_family()))


def compared_noise(results: Path, selected: Selected) -> list:
    """`bench compare`'s floors: the report's (`_noise`) from the results folder's runs
    alone (the command reads no results branch), applied to its Differences."""
    result = selected.result
    noise = _noise(results, history_entries(selected.index, result.envs, None), result)
    apply_floors(result.pairs, noise)
    return noise


def read_report_data(
    results: Path,
    envs: list[str] | None = None,
    commit: str | None = None,
    only: set[Path] | None = None,
    allow_different: bool = False,
    baseline: str | None = None,
    allow_dirty: bool = False,
    index: list[IndexedRun] | None = None,
    history: list[dict] | None = None,
    code_of: Callable[[str, str], CodeChange] | None = None,
    meanwhile: Callable[[], object] | None = None,
) -> ReportData:
    """Select, compare and decide one report: `select_and_compare` (running `meanwhile()`
    while the records are read) then `build_report_data`."""
    selected = select_and_compare(
        Path(results), envs, commit, only, allow_different, baseline, allow_dirty, index, meanwhile
    )
    return build_report_data(selected, results, history, code_of)
