"""The two groups an explanation compares: two commits' runs in a results folder, or the
two sides of a history change point (the runs its test compared).

Only runs that count in a history count here (bench.analysis.history.usable: finished
as asked, committed code): a failed or dirty run says nothing of its commit. A commit is
named by a prefix of its sha (as `bench compare --commit`); a prefix that matches no
run, or two commits, is one clear error naming the commits there are.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.analysis.changepoints import ChangePoint
from bench.analysis.explain import ExplainError, view_of_entry, view_of_record
from bench.analysis.explain_causes import RunView
from bench.analysis.history import CommitPoint, point_key, usable
from bench.records.profile import read_profile


def _match(shas: set[str], wanted: str, side: str, env: str) -> str:
    found = sorted(s for s in shas if s.startswith(wanted.lower()))
    if len(found) == 1:
        return found[0]
    known = ", ".join(s[:12] for s in sorted(shas)) or "none"
    if not found:
        raise ExplainError(f"no finished runs of commit {wanted!r} ({side}) on {env}; commits with runs: {known}")
    raise ExplainError(f"{wanted!r} ({side}) names {len(found)} commits on {env}: give more of the sha")


def commit_groups(
    results: Path, env: str, base: str, head: str, experiment: str | None = None
) -> tuple[str, str, list[RunView], list[RunView]]:
    """(base sha, head sha, base runs, head runs) of `env` in the results folder."""
    from bench.analysis.run_index import load_records, read_index

    if not (Path(results) / env).is_dir():
        raise ExplainError(f"no runs of environment {env!r} under {results}: collect its runs first, or pass --results")
    indexed = [r for r in read_index(Path(results), [env]) if usable(r.entry)]
    if experiment:
        indexed = [r for r in indexed if r.entry.get("experiment") == experiment]
    shas = {r.git_sha for r in indexed if r.git_sha}
    base_sha, head_sha = _match(shas, base, "base", env), _match(shas, head, "head", env)
    chosen = [r for r in indexed if r.git_sha in (base_sha, head_sha)]
    experiments = Counter(r.entry.get("experiment") for r in chosen)
    if len(experiments) > 1:
        names = ", ".join(sorted(str(e) for e in experiments))
        raise ExplainError(f"the two commits' runs are of several experiments ({names}): pass --experiment NAME")
    records = load_records(chosen)
    views = [view_of_record(r) for r in records]
    return (
        base_sha,
        head_sha,
        [v for v in views if v.commit == base_sha],
        [v for v in views if v.commit == head_sha],
    )


def entry_views(entries: Sequence[dict[str, Any]], results: Path | None = None) -> list[RunView]:
    """History entries as views; with a results folder, each run's profile.json is read
    from its record there (the entries do not hold it)."""
    views = []
    for e in entries:
        profile = None
        if results is not None:
            profile = read_profile(Path(results) / str(e.get("env")) / str(e.get("run_id")))[0]
        views.append(view_of_entry(e, profile))
    return views


def change_point_sides(
    cp: ChangePoint, points: Sequence[CommitPoint], entries: Sequence[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The entries of the runs on each side of a change point (the runs its test compared)."""
    before = {p.key for p in points[cp.start : cp.index]}
    after = {p.key for p in points[cp.index : cp.end]}
    mine = [
        e for e in entries if usable(e) and e.get("env") == cp.env and (e.get("experiment") or "?") == cp.experiment
    ]
    return [e for e in mine if point_key(e) in before], [e for e in mine if point_key(e) in after]
