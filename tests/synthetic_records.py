"""Synthetic run records in the exact on-disk format, for tests and benchmarks.

They let compare/report be exercised (and timed at 48 h x 1 Hz scale) without running
days of training. Deterministic: a seed gives the same files.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.atomic_files import write_json_atomic
from bench.records import contract as c
from bench.records.columns import COUNTER, GPU_CATALOGUE, HOST_CATALOGUE, Column
from bench.records.contract import BASE_COLUMNS, FIELD_NAMES, SCHEMA_VERSION, samples_name

CONFIG = {"experiment": "smoke", "batch_size": 8, "ch": 16, "max_iters": 40}
CONFIG_SHA = hashlib.sha256(json.dumps(CONFIG, sort_keys=True).encode()).hexdigest()
SYNTHETIC_COST = {"model": "cloud", "usd_per_gpu_hour": 2.0, "usd_per_cpu_hour": 0.05}


@dataclass
class RunSpec:
    env: str
    run_id: str
    sha: str = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"
    start: float = 1_790_000_000.0
    duration_s: float = 60.0
    interval_s: float = 1.0
    images_per_s: float = 100.0
    gpus: int = 0
    gpu_util: float = 80.0
    sm_active: float | None = None  # DCGM_FI_PROF_SM_ACTIVE (0-1); None: the catalogue's value
    cpu_pct: float = 150.0
    host_cpu_pct: float = 70.0  # the whole machine's CPU (% of all its cores), the job's share included
    steal_pct: float = 0.0  # the host's CPU time taken by the hypervisor, % of all its cores
    iowait_pct: float = 0.0  # the host's CPU time idle waiting for I/O, % of all its cores
    seed: int = 0
    config_sha256: str = CONFIG_SHA
    queue_wait_s: float = 0.0
    host: str = "node1"
    log_every_s: float = 5.0
    dirty: bool = False
    status: str = "success"
    # The environment facts collection freezes into run.json (None: an old record without them)
    cost: dict | None = field(default_factory=lambda: dict(SYNTHETIC_COST))
    environment: bool = True
    # A run timeline as collection writes it (bench.records.timeline); queue measured by a
    # clock of `queue_resolution_s` (None: no scheduler, the queue phase unknown).
    timeline: bool = False
    queue_resolution_s: float | None = 0.001
    # The timeline's other phases: bench's submit -> the scheduler has the job, the process
    # start -> its run_start (setup; warm-up is this plus one logging interval), exit -> placed.
    deliver_s: float = 1.0
    setup_s: float = 2.0
    collect_s: float = 5.0
    profile: dict | None = None  # written as profile.json (see synthetic_profile)


def synthetic_environment(spec: RunSpec) -> dict:
    """The facts collection freezes into run.json, as `bench.records.place` writes them."""
    return {
        "name": spec.env,
        "kind": "synthetic",
        "description": "synthetic test environment",
        "hardware": {"gpus_per_node": spec.gpus, "cores_per_node": 8},
        "cost": spec.cost,
        "price_source": f"clusters/{spec.env}/env.yaml (synthetic)",
        "collected_at": spec.start + spec.duration_s + 60.0,
        "collected_by": "synthetic",
    }


def write_run(results: Path, spec: RunSpec) -> Path:
    """Write run.json, samples-<host>.csv and train.jsonl under results/<env>/<run_id>/."""
    rng = np.random.default_rng(spec.seed)
    run_dir = Path(results) / spec.env / spec.run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    n, end, gpu_info = _write_samples(run_dir, spec, rng)
    _write_train_log(run_dir, spec, rng)
    record = _run_json(run_dir, spec, n, end, gpu_info)
    if spec.timeline:
        record["timeline"] = synthetic_timeline(spec, end)
    if spec.profile is not None:
        write_json_atomic(run_dir / "profile.json", spec.profile)
    write_json_atomic(run_dir / "run.json", record)
    return run_dir


BLOCKS = ("G.shared", "G.linear", "G.blocks.0", "G.blocks.1", "G.blocks.2", "G.blocks.3", "G.output",
          "D.blocks.0", "D.blocks.1", "D.blocks.2", "D.linear")  # fmt: skip
OPERATORS = ("aten::convolution_backward", "aten::mkldnn_convolution", "aten::bmm", "aten::native_batch_norm")


def synthetic_profile(
    ms: dict[str, float] | None = None, iters: int = 5, seed: int = 0, noise: float = 0.02, slower: float = 0.0
) -> dict:
    """A profile.json as the workload's profile window writes it (format atlas-profile/1):
    each module of BLOCKS takes `ms[module]` (default 10) ms of forward and as much again of
    backward per iteration, with seeded relative noise; G and D as wholes are their modules'
    sums. `slower`: ms per iteration added to the convolution operator (a slower layer's own
    operator moves with it: pass the same ms in `ms`)."""
    rng = np.random.default_rng(seed)
    times = {m: (ms or {}).get(m, 10.0) * (1 + rng.normal(0, noise)) for m in BLOCKS}
    modules: dict = {}
    for m in BLOCKS:
        t = times[m] * iters * 1000
        modules[m] = {
            "forward": {"calls": iters, "cpu_us": round(t, 1)},
            "backward": {"calls": iters, "cpu_us": round(t, 1)},
        }
    for root in ("G", "D"):
        t = sum(times[m] for m in BLOCKS if m.startswith(root + ".")) * iters * 1000
        modules[root] = {
            "forward": {"calls": iters, "cpu_us": round(t, 1)},
            "backward": {"calls": iters, "cpu_us": round(t, 1)},
        }
    ops = []
    for k, name in enumerate(OPERATORS):
        ms_op = (40.0 / (k + 1) + (slower if name == "aten::mkldnn_convolution" else 0.0)) * (1 + rng.normal(0, noise))
        ops.append({"name": name, "calls": 10 * iters, "self_cpu_us": round(ms_op * iters * 1000, 1)})
    return {
        "format": "atlas-profile/1",
        "iterations": {"first": 2, "last": 1 + iters, "count": iters},
        "device": "cpu",
        "torch": "2.13.0",
        "activities": ["cpu"],
        "window_s": 1.0,
        "compiled": [],
        "modules": modules,
        "top_operators": sorted(ops, key=lambda o: -o["self_cpu_us"]),
        "top_by": "self_cpu_us",
    }


def synthetic_timeline(spec: RunSpec, end: float) -> dict:
    """The timeline collection would write for this run: `deliver_s` of delivery, the queue
    wait, 0.5 s of launch, warm-up to the first train line, training to the last, `collect_s`
    to collect."""
    from bench.records.timeline import absent, build_timeline, mark

    t0 = spec.start + spec.setup_s
    steps = max(1, int((spec.duration_s - 2 - spec.setup_s) / spec.log_every_s))
    host, job = "bench-host", "job"
    scheduler = "slurmctld" if spec.queue_resolution_s and spec.queue_resolution_s >= 1 else host
    accepted = spec.start - 0.5 - spec.queue_wait_s
    marks = {
        "submitted": mark(accepted - spec.deliver_s, host, 0.001),
        "accepted": mark(accepted, scheduler, spec.queue_resolution_s or 0.001),
        "granted": mark(spec.start - 0.5, scheduler, spec.queue_resolution_s)
        if spec.queue_resolution_s
        else absent("no scheduler: the process starts at once"),
        "staged": absent("no staging step: the job reads this machine's files"),
        "pull_start": absent("no image: a bare process"),
        "recorder_start": mark(spec.start, job, 0.001),
        "workload_start": mark(spec.start, job, 0.001),
        "first_iter": mark(t0 + spec.log_every_s, job, 0.001),
        "last_iter": mark(t0 + steps * spec.log_every_s, job, 0.001),
        "exit": mark(end, job, 0.001),
        "collected": mark(end + spec.collect_s, host, 0.001),
    }
    return build_timeline({k: v for k, v in marks.items() if v is not None}, checkpoint_s=0.0)


def _default(col: Column, t: np.ndarray, interval_s: float) -> np.ndarray:
    """A column's synthetic values: its catalogue value, or for a counter a rise at that rate."""
    value = col.synthetic if col.synthetic is not None else np.nan
    if col.kind == COUNTER:
        return np.arange(len(t)) * value * interval_s
    return np.full(len(t), value)


def _write_samples(run_dir: Path, spec: RunSpec, rng: np.random.Generator) -> tuple[int, float, list[dict]]:
    """samples-<host>.csv; returns (rows, last sample time, run.json hardware.gpus)."""
    n = max(2, int(spec.duration_s / spec.interval_s) + 1)
    t = spec.start + np.arange(n) * spec.interval_s
    # Every column gets its catalogue row's value (a counter rises at that rate per second);
    # a few vary, drawn from the seeded stream in a fixed order, so adding a column to the
    # catalogue moves no drawn number.
    cols: dict[str, np.ndarray] = {col.name: _default(col, t, spec.interval_s) for col in HOST_CATALOGUE}
    cols.update(
        {
            "time": t,
            "proc_cpu_percent": np.clip(rng.normal(spec.cpu_pct, 10, n), 0, None),
            "proc_rss_bytes": 2e9 + np.linspace(0, 5e8, n),
            "host_cpu_percent": np.clip(rng.normal(spec.host_cpu_pct, 5, n), 0, 100),
        }
    )
    cols["host_cpu_steal_percent"] = np.full(n, spec.steal_pct)  # not drawn: no drawn number moves
    cols["host_cpu_iowait_percent"] = np.full(n, spec.iowait_pct)
    gpu_info = []
    for g in range(spec.gpus):
        vals = {col.name: _default(col, t, spec.interval_s) for col in GPU_CATALOGUE}
        vals[c.GPU_UTIL] = np.clip(rng.normal(spec.gpu_util, 5, n), 0, 100)
        vals[c.GPU_MEM_COPY_UTIL] = np.clip(rng.normal(30, 5, n), 0, 100)
        vals[c.GPU_ENERGY] = 1e9 + vals[c.GPU_ENERGY]
        if spec.sm_active is not None:
            vals[c.GPU_SM_ACTIVE] = np.full(n, spec.sm_active)
        for name in FIELD_NAMES:
            cols[f"gpu{g}_{name}"] = vals[name]
        gpu_info.append(
            {
                "index": g,
                "host_index": g,
                "uuid": f"GPU-synthetic-{g}",
                "model": "Tesla V100-SXM2-32GB",
                "memory_total_mib": 32768,
                "driver": "535.00",
            }
        )
    header = BASE_COLUMNS + [col for col in cols if col.startswith("gpu")]
    matrix = np.column_stack([cols[col] for col in header])
    fmts = ["%.3f"] + ["%.6g"] * (len(header) - 1)
    np.savetxt(run_dir / samples_name(spec.host), matrix, delimiter=",", fmt=fmts, header=",".join(header), comments="")
    return n, float(t[-1]), gpu_info


def _write_train_log(run_dir: Path, spec: RunSpec, rng: np.random.Generator) -> None:
    lines = []
    t0 = spec.start + spec.setup_s
    lines.append(
        {
            "event": "run_start",
            "time": t0,
            "iteration": 0,
            "resumed_from": None,
            "experiment": "smoke",
            "config": CONFIG,
            "config_sha256": spec.config_sha256,
            "device": "cpu",
            "world_size": 1,
            "seed": spec.seed,
        }
    )
    steps = max(1, int((spec.duration_s - 2 - spec.setup_s) / spec.log_every_s))
    seen = 0.0
    for i in range(1, steps + 1):
        rate = float(max(1.0, rng.normal(spec.images_per_s, spec.images_per_s * 0.02)))
        seen += rate * spec.log_every_s
        lines.append(
            {
                "event": "train",
                "time": t0 + i * spec.log_every_s,
                "iteration": i * 10,
                "images_seen": int(seen),
                "images_per_s": round(rate, 3),
                "g_loss": 1.0,
                "d_loss_real": 0.5,
                "d_loss_fake": 0.5,
                "wall_s": i * spec.log_every_s,
            }
        )
    t_stop = t0 + steps * spec.log_every_s + 0.5
    lines.append(
        {
            "event": "run_stop",
            "time": t_stop,
            "iteration": steps * 10,
            "status": "success",
            "g_sha256": "0" * 64,
            "images_seen": int(seen),
        }
    )
    (run_dir / "train.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def _run_json(run_dir: Path, spec: RunSpec, n: int, end: float, gpu_info: list[dict]) -> dict:
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": spec.run_id,
        "env": spec.env,
        "experiment": "smoke",
        "config": CONFIG,
        "config_sha256": spec.config_sha256,
        "git": {"sha": spec.sha, "dirty": spec.dirty},
        "image": {"ref": None, "digest": None},
        "hosts": [spec.host],
        "hardware": {
            "cpu_model": "Synthetic CPU",
            "cpu_cores_logical": 8,
            "cpu_cores_physical": 4,
            "cpu_affinity_cores": 8,
            "memory_bytes": 64e9,
            "cgroup": {"version": 2, "cpu_limit_cores": 4.0, "memory_limit_bytes": 16e9},
            "gpus": gpu_info,
        },
        "shape": {
            "nodes": 1,
            "gpus_per_node": spec.gpus,
            "gpus": spec.gpus,
            "processes_per_node": max(spec.gpus, 1),
            "source": {"nodes": "synthetic", "gpus_per_node": "synthetic"},
        },
        "software": {"python": "3.11.7", "platform": "synthetic", "torch": "2.13.0", "cuda": None, "cudnn": None},
        "command": ["python", "-m", "workflows.biggan", "--experiment", "smoke", "--run-dir", str(run_dir)],
        "scheduler": {
            "kind": "synthetic",
            "job_id": None,
            "submit_time": spec.start - spec.queue_wait_s,
            "start_time": spec.start,
            "end_time": end,
            "queue_wait_s": spec.queue_wait_s,
        },
        "exit": {"status": spec.status, "code": 0 if spec.status == "success" else 1, "signal": None},
        "resumed_from": None,
        "sampler_errors": [],
        "sample_interval_s": spec.interval_s,
        "samples_file": samples_name(spec.host),
        "samples_rows": n,
        "start_time": spec.start,
        "end_time": end,
        "previous_attempts": [],
        "bench_version": "synthetic",
        **({"environment": synthetic_environment(spec)} if spec.environment else {}),
    }
