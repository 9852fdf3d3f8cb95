"""An imported run as a run record: `run.json` + `samples-<host>.csv`, written once.

Every key of the recorder's `run.json` is present so readers need no special case;
what the files do not say is null, and `facts_unknown` lists those keys by name, so a
reader can tell "not measured" from "zero". The folder is staged and moved into the
results tree by `copy_record`, the same atomic step `bench collect` uses: a failed
import leaves nothing behind.
"""

from __future__ import annotations

import csv
import re
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bench import __version__
from bench.errors import AtlasError
from bench.importers.merge import Merged
from bench.records.contract import SCHEDULER_KEYS, SCHEMA_VERSION, samples_name
from bench.records.place import copy_record, write_json_atomic

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


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
    """Dotted keys whose value is null (`git.sha`, `hardware.cpu_model`, ...)."""
    out: list[str] = []
    for key, value in record.items():
        name = f"{prefix}{key}"
        if value is None:
            out.append(name)
        elif isinstance(value, dict) and key != "import":
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
        "gpus": _gpu_entries(merged, first),
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
    times = first["time"].to_numpy(dtype=float)
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


def write_record(results: Path, env: str, run_id: str, merged: Merged, record: dict[str, Any]) -> Path:
    """Stage the record in a temporary folder, then move it into RESULTS/ENV/RUN_ID at once."""
    for what, name in (("--env", env), ("--run-id", run_id)):
        if not SAFE_NAME.match(name):
            raise AtlasError(f"{what} {name!r}: use letters, digits, '.', '_' and '-' (it names a folder)")
    dest = Path(results) / env / run_id
    if dest.exists():
        raise AtlasError(
            f"{dest} already exists: records are immutable; choose another --run-id "
            "(or delete that folder to import again)"
        )
    with tempfile.TemporaryDirectory(prefix=".import-") as tmp:
        stage = Path(tmp)
        for host, frame in merged.hosts.items():
            write_samples(stage / samples_name(host), frame)
        write_json_atomic(stage / "run.json", record)
        copy_record(stage, dest)
    return dest
