"""The samples catalogue: one row per column of `samples-<host>.csv` (part of the record contract).

Each row says what the column is (name, unit, where it is read from, gauge or counter),
the values it can physically take and the value the synthetic writer gives it. Every
part of bench that handles a column derives from its row: the CSV header
(bench.records.contract), `bench check`'s range checks (bench.records.check), the
synthetic writer (tests/synthetic_records.py), the importers' units and dcgmi dmon tags
(bench.importers), the report figure of a row that names one (`metric`, its mean:
bench.analysis.metrics) and the tests. Adding a metric from a new column is its row here
plus its reader (bench/in_job/gpus.py for NVML, bench/in_job/sampler.py for the host).

GPU columns are written once per GPU as `gpu<i>_<name>`, named after DCGM's fields (what a
cluster's DCGM exporter reports: https://docs.nvidia.com/datacenter/dcgm/latest/dcgm-api/dcgm-api-field-ids.html),
so records line up with cluster monitoring.
"""

from __future__ import annotations

from dataclasses import dataclass

GAUGE, COUNTER = "gauge", "counter"


@dataclass(frozen=True)
class Column:
    """One samples column. `synthetic`: a gauge's value, a counter's rise per second."""

    name: str
    unit: str
    source: str  # where the recorder reads it: clock, psutil, cgroup, nvml
    kind: str  # GAUGE (a reading) or COUNTER (only grows; its rate is the figure)
    low: float | None  # the physical range `bench check` holds it to (None, None: not checked)
    high: float | None
    synthetic: float | None
    what: str
    dmon: str | None = None  # `dcgmi dmon`'s short tag for this field (GPU columns)
    high_per_core: bool = False  # `high` is per logical core (% of one core, summed over a tree)
    importable: bool = True  # an importer may fill it from a monitoring log
    metric: str = ""  # the key of its own report figure (its mean; bench.analysis.metrics derives it), "" none


# Host and process-tree columns, in CSV order.
HOST_CATALOGUE: tuple[Column, ...] = (
    Column("time", "s", "clock", COUNTER, None, None, 1.0, "unix seconds", importable=False),
    Column("proc_cpu_percent", "%", "psutil", GAUGE, 0.0, 105.0, 150.0, "process CPU % of a core", high_per_core=True),
    Column("proc_rss_bytes", "B", "psutil", GAUGE, 0.0, None, 2e9, "process memory bytes"),
    Column("proc_count", "", "psutil", GAUGE, None, None, 3.0, "processes in the tree", importable=False),
    Column("host_cpu_percent", "%", "psutil", GAUGE, 0.0, 100.5, 70.0, "host CPU %"),
    Column("host_mem_used_bytes", "B", "psutil", GAUGE, 0.0, None, 8e9, "host memory bytes"),
    Column("host_mem_total_bytes", "B", "psutil", GAUGE, None, None, 64e9, "host memory total bytes"),
    # Time the host's CPUs were taken by the hypervisor (steal) or idle waiting for I/O
    # (iowait), % of all logical CPUs: a busy neighbour shows here where host CPU % cannot
    # (bench.analysis.contention).
    Column(
        "host_cpu_steal_percent", "%", "psutil", GAUGE, 0.0, 100.5, 0.0, "host CPU steal %", metric="host_steal_pct"
    ),
    Column(
        "host_cpu_iowait_percent", "%", "psutil", GAUGE, 0.0, 100.5, 0.0, "host CPU iowait %", metric="host_iowait_pct"
    ),
    Column("cgroup_cpu_limit_cores", "cores", "cgroup", GAUGE, None, None, 4.0, "cgroup CPU quota (empty: none)"),
    Column("cgroup_mem_limit_bytes", "B", "cgroup", GAUGE, None, None, 16e9, "cgroup memory limit (empty: none)"),
    Column("cgroup_mem_used_bytes", "B", "cgroup", GAUGE, None, None, 3e9, "cgroup memory used"),
)

# Host columns only an import fills (sar's network counters, as rates); the recorder writes none.
IMPORTED_CATALOGUE: tuple[Column, ...] = (
    Column("host_net_rx_bytes_per_s", "B/s", "import", GAUGE, None, None, None, "host network received B/s"),
    Column("host_net_tx_bytes_per_s", "B/s", "import", GAUGE, None, None, None, "host network sent B/s"),
)

# Per-GPU columns, in CSV order (each GPU's block).
GPU_CATALOGUE: tuple[Column, ...] = (
    Column("DCGM_FI_DEV_GPU_UTIL", "%", "nvml", GAUGE, 0.0, 100.0, 85.0, "GPU utilisation %", "GPUTL"),
    Column("DCGM_FI_DEV_MEM_COPY_UTIL", "%", "nvml", GAUGE, 0.0, 100.0, 30.0, "GPU memory copy utilisation %", "MCUTL"),
    Column("DCGM_FI_DEV_FB_USED", "MiB", "nvml", GAUGE, 0.0, None, 12000.0, "GPU memory used MiB", "FBUSD"),
    Column("DCGM_FI_DEV_FB_TOTAL", "MiB", "nvml", GAUGE, 0.0, None, 32768.0, "GPU memory total MiB", "FBTTL"),
    Column("DCGM_FI_DEV_POWER_USAGE", "W", "nvml", GAUGE, 0.0, 2000.0, 250.0, "GPU power W", "POWER"),
    Column(
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "mJ", "nvml", COUNTER, None, None, 250_000.0, "GPU energy mJ", "TOTEC"
    ),
    Column("DCGM_FI_DEV_GPU_TEMP", "C", "nvml", GAUGE, None, None, 60.0, "GPU temperature C", "TMPTR"),
    Column("DCGM_FI_DEV_SM_CLOCK", "MHz", "nvml", GAUGE, None, None, 1530.0, "GPU SM clock MHz", "SMCLK"),
    # DCGM's profiling fields 1001-1005, ratios 0-1: what tells a GPU "busy" (GPU_UTIL: a
    # kernel was running) from "computing" (SMs holding warps, tensor pipes active). The
    # recorder reads them through NVML GPM (Hopper and newer); elsewhere they stay empty.
    Column("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "ratio", "nvml", GAUGE, 0.0, 1.0, 0.9, "graphics engine active", "GRACT"),
    Column("DCGM_FI_PROF_SM_ACTIVE", "ratio", "nvml", GAUGE, 0.0, 1.0, 0.6, "SM active", "SMACT"),
    Column("DCGM_FI_PROF_SM_OCCUPANCY", "ratio", "nvml", GAUGE, 0.0, 1.0, 0.35, "SM occupancy", "SMOCC"),
    Column("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "ratio", "nvml", GAUGE, 0.0, 1.0, 0.2, "tensor pipe active", "TENSO"),
    Column("DCGM_FI_PROF_DRAM_ACTIVE", "ratio", "nvml", GAUGE, 0.0, 1.0, 0.3, "device memory active", "DRAMA"),
)

CATALOGUE: dict[str, Column] = {col.name: col for col in HOST_CATALOGUE + IMPORTED_CATALOGUE + GPU_CATALOGUE}


def column_of(name: str) -> Column | None:
    """The catalogue row of a CSV column (`gpu3_DCGM_FI_DEV_GPU_UTIL` -> the GPU_UTIL row); None if unknown."""
    if name in CATALOGUE:
        return CATALOGUE[name]
    prefix, _, field = name.partition("_")
    return CATALOGUE.get(field) if prefix.startswith("gpu") and prefix[3:].isdigit() else None
