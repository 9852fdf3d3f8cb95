"""A Slurm run's timeline marks: bench's submit from this machine's ledger, the sbatch task's
end from ansible-runner's event, and Slurm's own Submit and Start (sacct, whole seconds).

Why these: `deliver` is bench's submit -> Slurm has the job (the playbook run, the code
archive, sbatch), `queue` is Slurm's Submit -> Start on slurmctld's one clock, so the queue
wait is Slurm's own figure and the clocks meet only at the ends (bench/records/timeline.py).
"""

from __future__ import annotations

from typing import Any

from bench.records.timeline import ATTEMPTS_KEY, HOST_RESOLUTION_S, SLURM_RESOLUTION_S, absent, iso_utc, mark

SBATCH_TASK = "Submit the batch script (sbatch --parsable)"  # ansible/roles/atlas/tasks/submit.yml


def task_end_time(events: list[dict[str, Any]], task: str) -> float | None:
    """When the named task finished, by ansible-runner's event for it (`event_data.end`, else
    the event's `created`: ISO 8601, UTC). Events are described in
    https://ansible.readthedocs.io/projects/runner/en/latest/intro/ (job events)."""
    for event in events:
        data = event.get("event_data") if isinstance(event.get("event_data"), dict) else {}
        if event.get("event") == "runner_on_ok" and data.get("task") == task:
            return iso_utc(data.get("end")) or iso_utc(event.get("created"))
    return None


def slurm_marks(run_id: str, ledger: dict[str, Any] | None, facts: dict[str, Any]) -> dict[str, Any]:
    """submitted (the ledger `submit` wrote), accepted = Slurm's Submit and granted = its Start
    (`facts`: what collect returned from sacct), sbatch_returned (ansible-runner's event);
    for a run of several attempts, `attempts`: the scheduler section's `attempt_times`."""
    ledger = ledger or {}
    nowhere = f"no ledger entry for {run_id} on this machine (submitted from another one)"
    marks = {
        "pushed": mark(ledger.get("pushed_at"), "bench-host", HOST_RESOLUTION_S),
        "submitted": mark(ledger.get("submit_started_at"), "bench-host", HOST_RESOLUTION_S) or absent(nowhere),
        "sbatch_returned": mark(ledger.get("sbatch_at"), "ansible-runner", HOST_RESOLUTION_S),
        "accepted": mark(facts.get("submit_time"), "slurmctld", SLURM_RESOLUTION_S),
        "granted": mark(facts.get("start_time"), "slurmctld", SLURM_RESOLUTION_S),
        "staged": absent("no staging step: the data is on the cluster's file system (bench stage-data checks it)"),
        "pull_start": absent("no image pull: conda or a Singularity image on the cluster's file system"),
    }
    out: dict[str, Any] = {name: m for name, m in marks.items() if m is not None}
    attempts = facts.get("attempt_times")
    if isinstance(attempts, list) and len(attempts) > 1:
        # a requeued or resubmitted run: each attempt's submit, ready, start and end from
        # the batch script's ledgers (bench/records/timeline_attempts.py cuts them)
        out[ATTEMPTS_KEY] = attempts
    return out
