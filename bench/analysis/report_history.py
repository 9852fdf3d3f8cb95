"""The report's history: which entries it draws (the results folder's run index and every
run the results branch keeps) and the confirmed change points of its headline figures."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.analysis.changepoints import ChangePoint, change_points
from bench.analysis.explain import Explanation, explain
from bench.analysis.explain_causes import CodeChange
from bench.analysis.explain_groups import change_point_sides, entry_views
from bench.analysis.history import CommitPoint, merge, series
from bench.analysis.metrics import HEADLINE, METRIC_BY_KEY
from bench.analysis.run_index import IndexedRun


@dataclass(frozen=True)
class ChangeNote:
    """One confirmed change point of a headline metric, with what is needed to say it."""

    change_text: str  # "Speed-up" / "Slow-down" ...: bench.analysis.changepoints.ChangePoint.change_text
    label: str  # the metric's label
    env: str
    commit: str
    before: float
    after: float
    p_value: float
    changed: str  # what the provenance says changed
    explained: Explanation | None = None  # bench explain over the runs on its two sides


def history_entries(index: list[IndexedRun], envs: list[str], kept: list[dict] | None) -> list[dict]:
    """History entries of the report's environments: the run index of the results folder
    (bench.analysis.run_index), and every run the results branch keeps (`kept`,
    bench/gitops/results_branch.py)."""
    local = [r.entry for r in index if r.env in envs and r.git_sha]
    return [e for e in merge(local, kept or []) if e.get("env") in envs]


def change_notes(
    entries: list[dict],
    experiment: str | None,
    results: Path | None = None,
    code_of: Callable[[str, str], CodeChange] | None = None,
) -> list[ChangeNote]:
    """Every confirmed change point of a headline metric in the report's experiment (all
    experiments when it has none), ordered by series, each explained as `bench history`
    explains it (profiles read from `results`; `code_of(base, head)`: the files changed,
    bench.gitops.code_changes, where the command can ask git)."""
    notes = []
    explained: dict[tuple, Explanation] = {}
    for key, points in sorted(series(entries).items()):
        env, exp, metric = key
        if metric not in HEADLINE or (experiment and exp != experiment):
            continue
        for cp in change_points(key, points):
            sides = (cp.env, cp.experiment, cp.start, cp.index, cp.end)
            if sides not in explained:
                explained[sides] = _explain(cp, points, entries, results, code_of)
            notes.append(
                ChangeNote(
                    cp.change_text,
                    METRIC_BY_KEY[metric].label,
                    env,
                    cp.commit,
                    cp.before,
                    cp.after,
                    cp.p_value,
                    cp.changed,
                    explained[sides],
                )
            )
    return notes


def _explain(
    cp: ChangePoint,
    points: list[CommitPoint],
    entries: list[dict],
    results: Path | None,
    code_of: Callable[[str, str], CodeChange] | None,
) -> Explanation:
    before, after = change_point_sides(cp, points, entries)
    base, head = points[cp.index - 1].commit, points[cp.index].commit
    code = code_of(base, head) if code_of else CodeChange(base, head, unknown="no repository asked")
    return explain(cp.env, base, head, entry_views(before, results), entry_views(after, results), code)
