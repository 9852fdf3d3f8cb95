"""The captions under the report's charts: which run each line was drawn from, and why.

A time-series chart draws one run per environment. The report picks the run with the
median images/s, and the next nearest when that one lacks the series; but an import of
sar and nvidia-smi has no images/s at all, and "from its run with the median images/s"
would then name a choice that was never made. So each environment's run is named with
the reason that really picked it. The history chart says how many commits it draws and
where they came from, so a chart with one point reads as "one commit so far", not as a
history.
"""

from __future__ import annotations

from collections.abc import Iterable

from bench.render.escape import code, md

SERIES_LEAD = (
    "One line per environment (mean per time bucket; the band spans the bucket's min–max), from one run each: "
)


def why_this_run(run_id: str, env_runs: list[tuple[str, float | None]], median_run: str | None) -> str:
    """Why `run_id` was drawn for its environment. `env_runs`: (run id, images/s or None) of the
    environment's compared runs; `median_run`: the run with the median images/s (None: none rated)."""
    if len(env_runs) == 1:
        return "its only run"
    if median_run is None:
        return f"none of its {len(env_runs)} runs recorded images/s: the first by run id that recorded this series"
    if run_id == median_run:
        return "the run with the median images/s"
    rated = dict(env_runs).get(run_id) is not None
    if rated:
        return "the run nearest the median images/s that recorded this series (the median run did not)"
    return "no run with images/s recorded this series: the first by run id that did"


def series_note(
    used: dict[str, str],
    runs: dict[str, list[tuple[str, float | None]]],
    median_runs: dict[str, str | None],
    lacking: Iterable[str],
) -> str:
    """The caption of one time-series chart. `used`: env -> run drawn; `runs`: env -> its compared
    runs' (run id, images/s); `median_runs`: env -> its median-images/s run (None: none rated)."""
    parts = [
        f"{md(env)}: `{code(run_id)}` ({why_this_run(run_id, runs.get(env, []), median_runs.get(env))})"
        for env, run_id in sorted(used.items())
    ]
    note = SERIES_LEAD + "; ".join(parts) + "."
    missing = sorted(lacking)
    if missing:
        note += " Missing: " + "; ".join(f"{md(e)} (none of its compared runs recorded it)" for e in missing) + "."
    return note


def history_note(points: list[tuple[str, int, str, float]], branch_read: bool) -> str:
    """The caption of history.png: how many commits, from where, and what one point is."""
    commits = len({p[1] for p in points})
    where = "the results folder and the results branch" if branch_read else "the results folder (no results branch)"
    note = f"Median images/s of each commit's runs, per environment: {commits} commit(s), from {where}."
    if commits == 1:
        note += (
            " One commit so far: each `bench archive` (or `make demo`, on the local `results` branch) keeps "
            "a commit's runs, and the next report draws them all."
        )
    return note
