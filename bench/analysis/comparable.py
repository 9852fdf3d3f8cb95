"""Which runs may enter the statistics, and why each other run may not.

A median over runs that trained different things, failed half-way, or ran uncommitted
code is a wrong number that looks right. So only successful runs of one experiment and
one `config_sha256`, from a clean tree, whose clock did not step (`RunData.clock_step`:
train.jsonl or samples times going backwards, or a training log outside the run's span:
its time to train and images/s would be wrong; no second clock corrects it), are compared;
every other run is kept, listed with its reason in the "excluded runs" table.

An imported record (`bench import`: an `import` section) is measurements of a run that
had ended before they were brought in; its exit status and configuration are unknown by
construction (named in `facts_unknown`), not signs of failure. So it is compared with
the other imported runs of its experiment, and with recorded runs only under
`--allow-different` (whose configuration it cannot be shown to share).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from bench.records.contract import FINISHED_OK
from bench.records.read import RunData


@dataclass(frozen=True)
class Excluded:
    env: str
    run_id: str
    reason: str


@dataclass
class Selection:
    runs: list[RunData]
    excluded: list[Excluded] = field(default_factory=list)
    experiment: str | None = None
    config_sha256: str | None = None


def _status(run: RunData) -> str | None:
    exit_info = run.meta.get("exit")
    status = exit_info.get("status") if isinstance(exit_info, dict) else None
    return status if isinstance(status, str) else None


def _dirty(run: RunData) -> bool | None:
    git = run.meta.get("git")
    dirty = git.get("dirty") if isinstance(git, dict) else None
    return dirty if isinstance(dirty, bool) else None


def _experiment(run: RunData) -> str | None:
    exp = run.meta.get("experiment")
    return exp if isinstance(exp, str) and exp else None


def imported(run: RunData) -> bool:
    """True for a record `bench import` wrote (its `import` section says from what)."""
    return isinstance(run.meta.get("import"), dict)


def _config(sha: str | None) -> str:
    return f"config_sha256 {sha[:12]}" if sha else "configuration unknown (imported)"


def own_reason(run: RunData, allow_dirty: bool) -> str | None:
    """Why this run cannot be compared with any other, or None."""
    if run.schema_problems:
        return f"damaged record: {run.schema_problems[0]}"
    if imported(run):
        return None  # status, config and git state unknown by construction (see the module's docstring)
    status = _status(run)
    if status is None:
        return "exit status unknown (run.json has none)"
    if status not in FINISHED_OK:
        return f"did not succeed (exit status {status})"
    if run.config_sha256 is None:
        return "no config_sha256: which configuration it trained is unknown"
    if _dirty(run) and not allow_dirty:
        return "ran uncommitted code (git.dirty); pass --allow-dirty to include it"
    if run.clock_step:  # its times (time to train, images/s, samples) cannot be trusted: no correction is made
        return f"the job's clock stepped: {run.clock_step}"
    return None


def select_comparable(runs: list[RunData], allow_dirty: bool = False, allow_different: bool = False) -> Selection:
    """Split `runs` into the comparable set and the excluded ones (with reasons).

    The compared experiment and config are those of the most runs (ties: the newest
    run's); `allow_different` keeps runs of other configs of the same experiment too.
    """
    excluded: list[Excluded] = []
    candidates: list[RunData] = []
    for run in runs:
        reason = own_reason(run, allow_dirty)
        if reason:
            excluded.append(Excluded(run.env, run.run_id, reason))
        else:
            candidates.append(run)
    if not candidates:
        return Selection([], excluded)
    counts = Counter((_experiment(r), r.config_sha256) for r in candidates)
    newest = {
        key: max(r.start_time or 0.0 for r in candidates if (_experiment(r), r.config_sha256) == key) for key in counts
    }
    experiment, config = max(counts, key=lambda k: (counts[k], newest[k]))
    chosen: list[RunData] = []
    for run in candidates:
        same_exp = _experiment(run) == experiment
        same_cfg = run.config_sha256 == config
        if same_exp and (same_cfg or allow_different):
            chosen.append(run)
        elif not same_exp:
            excluded.append(
                Excluded(run.env, run.run_id, f"other experiment {_experiment(run)!r} (compared: {experiment!r})")
            )
        else:
            excluded.append(
                Excluded(
                    run.env,
                    run.run_id,
                    f"other configuration: {_config(run.config_sha256)} (compared: {_config(config)}); "
                    "--allow-different includes it",
                )
            )
    excluded.sort(key=lambda e: (e.env, e.run_id))
    return Selection(chosen, excluded, experiment, None if allow_different else config)
