"""Run selection: which runs of a results tree a comparison, a report or a collect covers."""

from __future__ import annotations

from bench.errors import AtlasError
from bench.records.read import RunData


def choose_commit(runs: list[RunData], commit: str | None) -> str | None:
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


def commit_runs(runs: list[RunData], commit: str | None) -> tuple[str | None, list[RunData]]:
    """The commit to compare (see `choose_commit`) and its runs; runs without a sha are kept."""
    sha = choose_commit(runs, commit)
    return sha, [r for r in runs if r.git_sha is None or r.git_sha == sha]


def unreported_commits(
    finished: list[tuple[str, str | None]], env: str, reported: set[tuple[str, str]]
) -> set[str | None]:
    """Commits with a finished run (run_id, commit) of `env` that no report covers yet."""
    return {commit for run_id, commit in finished if (env, run_id) not in reported}
