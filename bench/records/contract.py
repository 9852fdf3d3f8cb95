"""The run record's on-disk contract: file names, `run.json` keys, statuses.

Everything downstream (collect, compare, report) reads only what this module names, so
the format is versioned (`schema_version`); `bench.records.place` writes it atomically.
See bench/README.md for the full contract.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.records.columns import GPU_CATALOGUE, HOST_CATALOGUE

SCHEMA_VERSION = 1
RUN_JSON = "run.json"
TRAIN_JSONL = "train.jsonl"
PROFILE_JSON = "profile.json"  # the workload's profile window (optional; bench.records.profile reads it)
SAMPLES_PREFIX = "samples-"
SAMPLES_SUFFIX = ".csv"

# Exit codes of a job: the workload's own (workflows/biggan/train.py defines the same, since
# the workload imports nothing from bench), passed through by `bench record`.
EXIT_OK, EXIT_FAILED, EXIT_CONFIG, EXIT_PREEMPTED = 0, 1, 2, 75  # 75: checkpointed on a signal; rerun resumes
EXIT_CANNOT_START = 127  # `bench record` could not start the command
# Exit codes of `bench` commands (bench/cli.py; bench/README.md lists them).
EXIT_USER_ERROR = 2  # a problem the user can fix (AtlasError): one line naming it and the fix
EXIT_DISK_FULL = 74  # ENOSPC/EDQUOT: one line naming the path and the space needed (sysexits EX_IOERR)
EXIT_CLOSED_PIPE = 128 + 13  # its reader went away (`bench ... | head`): SIGPIPE's exit, as a shell reports it
# Values of run.json exit.status. "running" is written at start; a record still saying
# "running" after its job ended means the recorder itself was killed. The others are the
# last run_stop status of train.jsonl, else derived from the exit code (`exit_status`).
EXIT_RUNNING = "running"
STATUS_SUCCESS, STATUS_MAX_SECONDS, STATUS_PREEMPTED = "success", "max_seconds", "preempted"
STATUS_FAILED, STATUS_KILLED = "failed", "killed"
STATUS_CANCELLED = "cancelled"  # `bench cancel` or a plain scancel: never resubmitted
# Marker file in a run folder: the run was cancelled (`bench cancel` on any target, or a
# plain scancel seen by the Slurm batch script); nothing resubmits it, its record says cancelled.
CANCEL_MARK = "CANCELLED"
# A fetch may return this key beside the scheduler's facts: what it refused to copy
# (bench.records.place names them in the record).
SKIPPED = "skipped_files"
FINISHED_OK = (STATUS_SUCCESS, STATUS_MAX_SECONDS)  # the run did what it was asked
# What a failed exit code means, for status lines.
EXIT_WORDS = {
    EXIT_PREEMPTED: "preempted: a checkpoint was saved; submitting the same run again resumes",
    EXIT_CONFIG: "bad configuration (see the job's log)",
    EXIT_DISK_FULL: "disk full (see the job's log): free space, then run it again to resume from its last checkpoint",
    EXIT_CANNOT_START: "the command could not start",
    137: "killed (SIGKILL)",
}


def exit_status(code: int | None, signal_name: str | None = None, run_stop: str | None = None) -> str:
    """run.json exit.status: killed by a signal, else the workload's run_stop, else from the code."""
    if signal_name:
        return STATUS_KILLED
    if run_stop:
        return run_stop
    if code == EXIT_OK:
        return STATUS_SUCCESS
    return STATUS_PREEMPTED if code == EXIT_PREEMPTED else STATUS_FAILED


def status_exit_code(status: Any) -> int | None:
    """The exit code a run.json exit.status stands for: 0 finished OK, 75 preempted, else None."""
    return EXIT_OK if status in FINISHED_OK else EXIT_PREEMPTED if status == STATUS_PREEMPTED else None


# A job killed by SIGUSR1 (128 + 10 on Linux): the time-limit warning arrived while Python
# was still starting, before any handler existed (USR1's default action is to terminate).
EXIT_USR1 = 128 + 10


def job_exit_code(code: int, run_stop: str | None = None, warned: bool = False) -> int:
    """The batch job's exit code (the one rule; `exit_status` gives its word): the launcher's
    0 or 75 stands; else the workload's own run_stop of this job decides (torchrun exits 1
    after its workers checkpointed, a late signal can hit the recorder after the work was
    done); a USR1 death after the warning is a preemption (resume from the checkpoint)."""
    if code in (EXIT_OK, EXIT_PREEMPTED):
        return code
    if run_stop is None and warned and code == EXIT_USR1:
        run_stop = STATUS_PREEMPTED
    meant = status_exit_code(exit_status(code, None, run_stop))
    return code if meant is None else meant


def exit_succeeded(status: Any, code: Any) -> bool:
    """The one rule for "the run did what it was asked": a finished-OK exit.status and exit code 0."""
    return status in FINISHED_OK and code == 0


def queue_wait_s(submit_time: Any, start_time: Any) -> float | None:
    """Scheduler queue wait (s): submit -> start, never negative; None unless both are numbers."""
    numbers = all(isinstance(t, (int, float)) and not isinstance(t, bool) for t in (submit_time, start_time))
    return round(max(0.0, float(start_time) - float(submit_time)), 3) if numbers else None


# Every top-level key the recorder writes (bench/README.md documents each one).
RUN_JSON_KEYS = (
    "schema_version",
    "run_id",
    "env",
    "experiment",
    "config",
    "config_sha256",
    "git",
    "image",
    "hosts",
    "hardware",
    "software",
    "command",
    "scheduler",
    "exit",
    "resumed_from",
    "sampler_errors",
    "sample_interval_s",
    "start_time",
    "end_time",
    "previous_attempts",
    "bench_version",
    "samples_file",
    "samples_rows",
    "recorder",
    "shape",
    "data",
)
SCHEDULER_KEYS = ("kind", "job_id", "submit_time", "start_time", "end_time", "queue_wait_s")


def samples_name(host: str) -> str:
    """`samples-<host>.csv`, with characters unsafe in a file name replaced."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in host) or "host"
    return f"{SAMPLES_PREFIX}{safe}{SAMPLES_SUFFIX}"


def read_run_json(run_dir: Path) -> dict[str, Any]:
    """The parsed `run.json` of a run directory (raises OSError / ValueError as json does)."""
    return json.loads((Path(run_dir) / RUN_JSON).read_text())


def samples_files(run_dir: Path) -> list[Path]:
    return sorted(Path(run_dir).glob(f"{SAMPLES_PREFIX}*{SAMPLES_SUFFIX}"))


# -- samples-<host>.csv: the columns -----------------------------------------------------

# Host and process-tree columns, in CSV order: the catalogue's rows (bench.records.columns).
BASE_COLUMNS = [col.name for col in HOST_CATALOGUE]

# Per GPU `gpu<i>_<field>`: NVML readings named after DCGM's fields (bench.records.columns
# holds each one's row; bench.in_job.gpus reads each through NVML). Names used by code:
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
GPU_MEM_COPY_UTIL = "DCGM_FI_DEV_MEM_COPY_UTIL"
GPU_FB_USED = "DCGM_FI_DEV_FB_USED"
GPU_FB_TOTAL = "DCGM_FI_DEV_FB_TOTAL"
GPU_POWER = "DCGM_FI_DEV_POWER_USAGE"
GPU_ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
GPU_TEMP = "DCGM_FI_DEV_GPU_TEMP"
GPU_SM_CLOCK = "DCGM_FI_DEV_SM_CLOCK"
GPU_GR_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
GPU_SM_ACTIVE = "DCGM_FI_PROF_SM_ACTIVE"
GPU_SM_OCCUPANCY = "DCGM_FI_PROF_SM_OCCUPANCY"
GPU_TENSOR_ACTIVE = "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"
GPU_DRAM_ACTIVE = "DCGM_FI_PROF_DRAM_ACTIVE"
# (field, unit), in CSV column order: the catalogue's GPU rows.
GPU_FIELDS: tuple[tuple[str, str], ...] = tuple((col.name, col.unit) for col in GPU_CATALOGUE)
FIELD_NAMES = tuple(name for name, _ in GPU_FIELDS)


def gpu_columns(count: int) -> list[str]:
    return [f"gpu{i}_{name}" for i in range(count) for name in FIELD_NAMES]


def job_gpu_ids(meta: dict[str, Any], columns) -> list[str]:
    """The `gpuN` prefixes of the job's GPUs: those `run.json` lists in `hardware.gpus` (by
    `index`), so GPUs that were sampled but not the job's (an imported nvidia-smi log of a
    4-GPU node for a 1-GPU job) count in no figure; every sampled GPU when it lists none."""
    hw = meta.get("hardware") if isinstance(meta.get("hardware"), dict) else {}
    listed = hw.get("gpus") if isinstance(hw.get("gpus"), list) else []
    wanted = {f"gpu{g['index']}" for g in listed if isinstance(g, dict) and isinstance(g.get("index"), int)}
    present = gpu_ids(columns)
    return [g for g in present if g in wanted] or present


def gpu_ids(columns) -> list[str]:
    """The `gpuN` prefixes present among samples columns, in GPU order."""
    return sorted(
        {c.split("_", 1)[0] for c in columns if c.startswith("gpu") and "_DCGM_" in c},
        key=lambda g: int(g[3:]) if g[3:].isdigit() else 0,
    )
