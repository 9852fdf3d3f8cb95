"""The batch job's exit code, decided by the one rule once the launcher has exited.

Why here and not in the batch script: the rule (bench/records/contract.py `job_exit_code`)
is the contract's, so the Slurm script asks for it instead of writing it again in shell:

    python -m bench.in_job.job_exit --run-dir DIR --code RC --since UNIX_S [--warned 0|1]

prints the exit code the job must end with on stdout (75 makes the script resubmit) and,
when it differs from RC, why on stderr. The workload's last word counts only when it is
the last event of train.jsonl and was logged at or after `--since` (this job's start): a
run_stop of an earlier job of the chain says nothing of this one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.records.contract import TRAIN_JSONL, job_exit_code
from bench.records.trainlog import read_train_log


def this_jobs_run_stop(run_dir: Path, since: float) -> str | None:
    """The status of train.jsonl's last event when it is a run_stop logged since `since`."""
    events = read_train_log(run_dir / TRAIN_JSONL).events
    last = events[-1] if events else None
    if not last or last.get("event") != "run_stop" or not isinstance(last.get("status"), str):
        return None
    stop_time = last.get("time")
    if isinstance(stop_time, bool) or not isinstance(stop_time, (int, float)) or int(stop_time) < int(since):
        return None
    return last["status"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.in_job.job_exit", description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, required=True, help="the run folder (train.jsonl)")
    parser.add_argument("--code", type=int, required=True, help="the launcher's exit code")
    parser.add_argument("--since", type=float, required=True, help="this job's start (Unix seconds)")
    parser.add_argument("--warned", type=int, choices=(0, 1), default=0, help="1: the time-limit warning came")
    args = parser.parse_args(argv)
    stop = this_jobs_run_stop(args.run_dir, args.since)
    code = job_exit_code(args.code, stop, bool(args.warned))
    if code != args.code:
        why = f"the workload's run_stop says {stop}" if stop else "the warning signal arrived before it was caught"
        print(f"atlas: exit {args.code} of the launcher ends the job as {code}: {why}", file=sys.stderr)
    print(code)
    return 0


if __name__ == "__main__":
    sys.exit(main())
