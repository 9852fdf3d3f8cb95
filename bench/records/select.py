"""Run selection: which runs of a results tree a comparison, a report or a collect covers.

It needs of a run only its commit, its start and its folder: a whole record (`RunData`)
or its index entry (bench.analysis.run_index.IndexedRun) both serve, so a command can
select before it reads any samples."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Protocol, TypeVar

from bench.errors import AtlasError


class Selectable(Protocol):
    """What selection reads of a run."""

    @property
    def git_sha(self) -> str | None: ...

    @property
    def start_time(self) -> float | None: ...

    @property
    def path(self) -> Path: ...


Run = TypeVar("Run", bound=Selectable)


def choose_commit(runs: list[Run], commit: str | None) -> str | None:
    """The commit to report: the one asked for, else that of the newest run."""
    if commit:
        shas = sorted({r.git_sha for r in runs if r.git_sha and r.git_sha.startswith(commit)})
        if not shas:
            known = sorted({r.git_sha[:12] for r in runs if r.git_sha})
            raise AtlasError(
                f"no runs of commit {commit!r} in the results (commits present: {', '.join(known) or 'none'})"
            )
        return shas[0]
    dated = [(r.start_time or 0.0, r.git_sha) for r in runs if r.git_sha]
    return max(dated)[1] if dated else None


def commit_runs(runs: list[Run], commit: str | None) -> tuple[str | None, list[Run]]:
    """The commit to compare (see `choose_commit`) and its runs; runs without a sha are kept."""
    sha = choose_commit(runs, commit)
    return sha, [r for r in runs if r.git_sha is None or r.git_sha == sha]


def select_runs(
    all_runs: list[Run], commit: str | None, only: set[Path] | None, results: Path
) -> tuple[str | None, list[Run]]:
    """(sha, runs): one commit's runs (`commit_runs`), or exactly the run folders in `only`
    with the commit most of them share."""
    if only is None:
        return commit_runs(all_runs, commit)
    wanted = {Path(p).resolve() for p in only}
    runs = [r for r in all_runs if r.path.resolve() in wanted]
    if not runs:
        raise AtlasError(f"none of the {len(wanted)} requested run folder(s) is under {results}")
    shas = Counter(r.git_sha for r in runs if r.git_sha)
    return (sorted(shas.items(), key=lambda kv: (-kv[1], kv[0]))[0][0] if shas else None), runs


def same_commit(run_sha: str | None, wanted: str) -> bool:
    """`run_sha` and `wanted` name the same commit (either may be a prefix of the other)."""
    return bool(run_sha) and (run_sha.startswith(wanted) or wanted.startswith(run_sha))


def unreported_commits(
    finished: list[tuple[str, str | None]], env: str, reported: set[tuple[str, str]]
) -> set[str | None]:
    """Commits with a finished run (run_id, commit) of `env` that no report covers yet."""
    return {commit for run_id, commit in finished if (env, run_id) not in reported}
