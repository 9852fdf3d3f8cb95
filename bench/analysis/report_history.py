"""The report's history: which entries it draws (the results folder's run index and every
run the results branch keeps) and the confirmed change points of its headline figures."""

from __future__ import annotations

from dataclasses import dataclass

from bench.analysis.changepoints import change_points
from bench.analysis.history import merge, series
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


def history_entries(index: list[IndexedRun], envs: list[str], kept: list[dict] | None) -> list[dict]:
    """History entries of the report's environments: the run index of the results folder
    (bench.analysis.run_index), and every run the results branch keeps (`kept`,
    bench/gitops/results_branch.py)."""
    local = [r.entry for r in index if r.env in envs and r.git_sha]
    return [e for e in merge(local, kept or []) if e.get("env") in envs]


def change_notes(entries: list[dict], experiment: str | None) -> list[ChangeNote]:
    """Every confirmed change point of a headline metric in the report's experiment (all
    experiments when it has none), ordered by series."""
    notes = []
    for key, points in sorted(series(entries).items()):
        env, exp, metric = key
        if metric not in HEADLINE or (experiment and exp != experiment):
            continue
        for cp in change_points(key, points):
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
                )
            )
    return notes
