"""An imported run as a run record: `run.json` + `samples-<host>.csv`, written once.

Every key of the recorder's `run.json` is present so readers need no special case;
what the files do not say is null, and `facts_unknown` lists those keys by name, so a
reader can tell "not measured" from "zero". The record must meet the run-record schema
(`records/run.schema.json`, which lets a record with an `import` section leave its
hosts, start and exit status null) before anything is written; it is then placed by
`records.place.place_run`, the one writer `bench collect` uses too: staged beside its
folder under the results tree's lock, the environment's facts (handed in by `bench
import`) frozen in, renamed into place once. A failed import leaves nothing behind.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bench import __version__
from bench.atomic_files import write_json_atomic
from bench.errors import AtlasError
from bench.importers.merge import Merged
from bench.names import check_name
from bench.records.contract import RUN_JSON, SCHEDULER_KEYS, SCHEMA_VERSION, samples_name
from bench.records.place import freeze, place_run
from bench.records.schema import schema_problems


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return ""
    text = f"{float(value):.3f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


def write_samples(path: Path, frame: pd.DataFrame) -> int:
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(list(frame.columns))
        for row in frame.itertuples(index=False):
            writer.writerow([_fmt(v) for v in row])
    return len(frame)


def unknown_facts(record: dict[str, Any], prefix: str = "") -> list[str]:
    """Dotted keys whose value is null (`git.sha`, `hardware.cpu_model`, ...): the run's
    facts. `import` (how it was read) and `environment` (the environment's facts, frozen
    at placement) are not facts of the run and are not walked."""
    out: list[str] = []
    for key, value in record.items():
        name = f"{prefix}{key}"
        if value is None:
            out.append(name)
        elif isinstance(value, dict) and key not in ("import", "environment"):
            out.extend(unknown_facts(value, f"{name}."))
    return sorted(out)


def _gpu_entries(merged: Merged, first: pd.DataFrame) -> list[dict[str, Any]]:
    job = merged.gpus_job if merged.gpus_job is not None else merged.gpus_sampled
    out = []
    for g in job:
        facts = merged.gpu_facts.get(g, {})
        total = facts.get("memory_total_mib")
        col = f"gpu{g}_DCGM_FI_DEV_FB_TOTAL"
        if total is None and col in first and first[col].notna().any():
            total = int(first[col].max())
        out.append(
            {
                "index": g,
                "host_index": g,
                "uuid": facts.get("uuid"),
                "model": facts.get("model"),
                "memory_total_mib": total,
                "driver": facts.get("driver"),
            }
        )
    return out


def _hardware(merged: Merged, first: pd.DataFrame) -> dict[str, Any]:
    f = merged.facts
    return {
        "cpu_model": f.get("cpu_model"),
        "cpu_cores_logical": f.get("cpu_cores_logical"),
        "cpu_cores_physical": f.get("cpu_cores_physical"),
        "cpu_affinity_cores": None,
        "memory_bytes": f.get("memory_bytes"),
        "cgroup": {"version": None, "cpu_limit_cores": None, "memory_limit_bytes": None},
        # no GPU file imported: which GPUs the job had is unknown (null), not "none" ([])
        "gpus": _gpu_entries(merged, first) if merged.gpus_sampled or merged.gpus_job else None,
    }


def build_run_json(
    merged: Merged,
    env: str,
    run_id: str,
    experiment: str | None = None,
    git_sha: str | None = None,
    timezone: str = "UTC",
) -> dict[str, Any]:
    hosts = sorted(merged.hosts)
    first = merged.hosts[hosts[0]]
    # The run spans every host's samples (a record's start and end bound each samples file).
    times = np.concatenate([frame["time"].to_numpy(dtype=float) for frame in merged.hosts.values()])
    times = times[np.isfinite(times)]
    start = float(times.min()) if merged.absolute_clock and times.size else None
    end = float(times.max()) if merged.absolute_clock and times.size else None
    # The finest sampling among the files (each file's median step; run.json import.sources has all).
    steps = [src["interval_s"] for src in merged.sources if src.get("interval_s")]
    interval = min(steps) if steps else None
    record: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "bench_version": __version__,
        "run_id": run_id,
        "env": env,
        "experiment": experiment,
        "config": None,
        "config_sha256": None,
        "git": {"sha": git_sha, "dirty": None},
        "image": {"ref": None, "digest": None},
        "hosts": hosts if merged.host_known else None,
        # nodes x GPUs and the data file are the job's facts, which sampling files do not
        # state: unknown (the GPU figures use the job's GPUs among those sampled instead)
        "shape": None,
        "data": None,
        "hardware": _hardware(merged, first),
        "software": {
            "python": None,
            "platform": merged.facts.get("platform"),
            "torch": None,
            "cuda": None,
            "cudnn": None,
        },
        "command": None,
        "scheduler": {**dict.fromkeys(SCHEDULER_KEYS), "start_time": start, "end_time": end},
        "exit": {"status": None, "code": None, "signal": None, "signals_forwarded": None},
        "resumed_from": None,
        "sampler_errors": [],
        "sample_interval_s": interval,
        "start_time": start,
        "end_time": end,
        "previous_attempts": [],
        "samples_file": samples_name(hosts[0]),
        "samples_rows": int(len(first)),
        "recorder": None,
        "import": {
            "by": "bench import",
            "sources": merged.sources,
            "timezone": timezone,
            "clock": "absolute" if merged.absolute_clock else "relative: no file gave a date; times count from 0 s",
            "gpus_sampled": merged.gpus_sampled,
            "gpus_job": merged.gpus_job,
        },
    }
    record["facts_unknown"] = unknown_facts(record)
    return record


def write_record(
    results: Path, environment: Mapping[str, Any], run_id: str, merged: Merged, record: dict[str, Any]
) -> Path:
    """Place the record into RESULTS/ENV/RUN_ID as collection does; returns the folder.

    `environment`: the environment's facts the record keeps, computed by the caller
    (bench.environments.facts.environment_facts): the importers read no env.yaml. The
    record is checked against the schema first (with those facts), so an import never
    places a record that `bench check` would refuse.
    """
    env_name = str(environment.get("name"))
    check_name(env_name, "environment")
    check_name(run_id, "run id")
    problems = schema_problems(freeze(json.loads(json.dumps(record, default=str)), environment, {}))
    if problems:
        raise AtlasError(f"the imported record does not meet the run-record schema: {problems[0]}; nothing written")
    dest = Path(results) / env_name / run_id
    if dest.exists():
        raise AtlasError(
            f"{dest} already exists: records are immutable; choose another --run-id "
            "(or delete that folder to import again)"
        )

    def fetch(into: Path) -> dict[str, Any]:
        for host, frame in merged.hosts.items():
            write_samples(into / samples_name(host), frame)
        write_json_atomic(into / RUN_JSON, record)
        return {}  # the scheduler's facts an import knows are in the record already

    placed = place_run(Path(results), environment, run_id, fetch)
    if not placed.new:  # another import or collect placed it between the check and the lock
        raise AtlasError(f"{dest} already exists: records are immutable; choose another --run-id")
    return placed.path
