"""The metric catalogue, and one row of figures per run computed from its record only.

Each `Metric` says what a figure is called, its unit, which way is better, which record
columns it comes from and which charts show it; the comparison, the tables, the charts,
the regression verdicts and the PR comment all read this catalogue, so a new report
metric is one entry in `METRICS` (the mean of a new samples column: the `metric` of its
row in `bench.records.columns`). A figure is None when the record cannot support it (and
`records.read.load_run` has already said why), so one damaged run never hides the others.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bench.analysis import fastpath as fp
from bench.analysis import time_sums as ts
from bench.analysis import timeline_metrics as tm
from bench.analysis.attempts import attempt_spans, per_attempt, wall_over_attempts
from bench.analysis.cost import record_cost
from bench.analysis.samples_figure import Samples, number
from bench.records import contract as c
from bench.records.columns import CATALOGUE, GPU_CATALOGUE
from bench.records.energy_counter import counter_energy_wh
from bench.records.read import RunData
from bench.records.shape import recorded_shape
from bench.records.trainlog import (
    images_seen,
    lost_iterations,
    outcome,
    startup_s,
    steady_images_per_s,
    time_to_train,
)

HIGHER, LOWER = "higher", "lower"  # Metric.direction; "" = neither (a fact, not a score)


@dataclass(frozen=True)
class Derived:
    """A figure computed by a function of the run (train log, run.json, other figures)."""

    fn: Callable[[RunContext], float | None]
    source: str  # which record fields it reads, for people
    # (run, ) -> (seconds since the run's start, value), for a time-series chart
    series_fn: Callable[[RunData], tuple[np.ndarray, np.ndarray]] | None = None

    def value(self, ctx: RunContext) -> float | None:
        return self.fn(ctx)

    def series(self, run: RunData, chart: TimeSeries) -> tuple[np.ndarray, np.ndarray]:
        return self.series_fn(run) if self.series_fn else (np.empty(0), np.empty(0))


@dataclass(frozen=True)
class TimeSeries:
    """A time-series chart of this metric's source, one line per environment."""

    name: str  # the PNG's file name without .png
    title: str
    ylabel: str
    combine: str = "mean"  # several GPUs on one line: mean or sum
    since: str = "job start"  # the x axis's zero


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str
    direction: str  # HIGHER, LOWER or "" (neither)
    source: Samples | Derived
    digits: int = 3  # significant digits shown
    headline: bool = False  # tested between environments, drawn in summary.png, judged on PRs
    in_runs_table: bool = False  # a column of the report's per-run table
    in_summary: bool = True  # a row of the per-environment summary table
    timeseries: TimeSeries | None = None

    @property
    def higher_is_better(self) -> bool | None:
        return {HIGHER: True, LOWER: False}.get(self.direction)


class RunContext:
    """What derived figures read: the run (its record holds the frozen cost model) and the other figures.

    Every context of one run shares what is computed (kept in `run.memo`): a figure is a
    function of the record alone, so the comparison, the cross-checks and the tables each
    ask for it and it is computed once, where the record was read (run_index.load_records)."""

    def __init__(self, run: RunData) -> None:
        self.run = run
        self.meta = run.meta
        known = run.memo.setdefault("figures", {"values": {}, "notes": {}, "origins": {}, "resolutions": {}})
        self.values: dict[str, float | None] = known["values"]
        self.notes: dict[str, str] = known["notes"]
        self.origins: dict[str, str] = known["origins"]  # metric key -> "process" or "host", for fallback-able figures
        self.resolutions: dict[str, float] = known["resolutions"]  # metric key -> its clock's resolution (s)

    def __getitem__(self, key: str) -> float | None:
        if key not in self.values and key in self.run.refused:  # bench check named why: unknown, not a guess
            self.values[key] = None
            self.notes["cost" if key == "cost_usd" else key] = self.run.refused[key]  # cost_note says why
        if key not in self.values:
            source = METRIC_BY_KEY[key].source if key in METRIC_BY_KEY else None
            self.values[key] = source.value(self) if source is not None else None
            if isinstance(source, Samples) and source.host_column and self.values[key] is not None:
                picked = source.origin(self.run)
                self.origins[key] = picked[2] if picked else "process"
        return self.values[key]

    def section(self, *path: str) -> dict[str, Any]:
        node: Any = self.meta
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        return node if isinstance(node, dict) else {}


# -- derived figures ---------------------------------------------------------------------


def _wall(ctx: RunContext) -> float | None:
    """Every attempt's wall time, summed (bench.analysis.attempts)."""
    total = wall_over_attempts(attempt_spans(ctx.meta, ctx.run.samples))
    if total is not None:
        return total
    spans = [float(df["time"].iloc[-1] - df["time"].iloc[0]) for df in ctx.run.samples.values() if len(df) > 1]
    return max(spans) if spans else None


def _images_per_s(ctx: RunContext) -> float | None:
    rates = steady_images_per_s(ctx.run.train)
    return float(np.median(rates)) if rates.size else None


def _images_per_s_iqr(ctx: RunContext) -> float | None:
    rates = steady_images_per_s(ctx.run.train)
    return float(np.subtract(*np.percentile(rates, [75, 25]))) if rates.size else None


def _gpus(ctx: RunContext) -> float | None:
    """The job's GPUs: run.json `shape` (what ran); older records: the job's GPUs sampled,
    else hardware.gpus; None when nothing says (never read as 'no GPU')."""
    shape = recorded_shape(ctx.meta)
    if shape is not None:
        return float(shape.gpus)
    n = sum(len(c.job_gpu_ids(ctx.meta, df.columns)) for df in ctx.run.samples.values())
    hw_gpus = ctx.section("hardware").get("gpus")
    if n:
        return float(n)
    return float(len(hw_gpus)) if isinstance(hw_gpus, list) else None


def _nodes(ctx: RunContext) -> float:
    shape = recorded_shape(ctx.meta)
    hosts = ctx.meta.get("hosts") if isinstance(ctx.meta.get("hosts"), list) else list(ctx.run.samples)
    return float(shape.nodes if shape is not None else max(len(hosts), 1))


def _per_gpu(ctx: RunContext) -> float | None:
    ips, gpus = ctx["images_per_s"], ctx["gpus"]
    return ips / gpus if ips is not None and gpus else None


def _gpu_hours(ctx: RunContext) -> float | None:
    wall, gpus = ctx["wall_s"], ctx["gpus"]
    return gpus * wall / 3600 if wall is not None and gpus else None


def _cpu_limit(ctx: RunContext) -> float | None:
    hw, cg = ctx.section("hardware"), ctx.section("hardware", "cgroup")
    # the job's allowance only: a host's core count is not a limit (runs.csv keeps an unknown limit unknown)
    return number(cg.get("cpu_limit_cores")) or number(hw.get("cpu_affinity_cores"))


def _mem_limit_gb(ctx: RunContext) -> float | None:
    """The job's own memory limit (its cgroup's: what a request sets); a bare process and an
    import have none, and the machine's memory is no request: unknown, as the CPU allowance."""
    limit = number(ctx.section("hardware", "cgroup").get("memory_limit_bytes"))
    return limit / 1e9 if limit else None


def _host_mem_gb(ctx: RunContext) -> float | None:
    """The machine's memory: run.json hardware.memory_bytes, else the samples' host total (imports)."""
    recorded = number(ctx.section("hardware").get("memory_bytes"))
    total = recorded or Samples("host_mem_total_bytes", "max", "max").value(ctx)
    return total / 1e9 if total else None


def _gpu_energy_wh(df: pd.DataFrame, gpu: str) -> float | None:
    """The energy counter's monotonic segments (bench.records.energy_counter: unknown when it is no
    counter, never 0), else power (W) integrated over time."""
    counter_col, power_col = f"{gpu}_{c.GPU_ENERGY}", f"{gpu}_{c.GPU_POWER}"
    if counter_col in df and df[counter_col].notna().sum() >= 2:
        t, mj = df["time"].to_numpy(dtype=float), df[counter_col].to_numpy(dtype=float, na_value=np.nan)
        return counter_energy_wh(t, mj, counter_col)[0]
    if power_col in df:
        t = df["time"].to_numpy(dtype=float)
        p = df[power_col].to_numpy(dtype=float, na_value=np.nan)
        ok = np.isfinite(p)
        if ok.sum() >= 2:
            return float(np.trapezoid(p[ok], t[ok])) / 3600.0  # W*s -> Wh
    return None


def _energy_wh(ctx: RunContext) -> float | None:
    spans = attempt_spans(ctx.meta, ctx.run.samples)
    energy = [
        e
        for df in ctx.run.samples.values()
        for g in c.job_gpu_ids(ctx.meta, df.columns)
        if (e := per_attempt(df, spans, lambda part, g=g: _gpu_energy_wh(part, g))) is not None
    ]
    return float(sum(energy)) if energy else None


def _cost_usd(ctx: RunContext) -> float | None:
    gpus = None if ctx["gpus"] is None else int(ctx["gpus"])
    cost = record_cost(ctx.meta, ctx["wall_s"], gpus, int(ctx["nodes"] or 1), ctx["energy_wh"], ctx["cpu_limit_cores"])
    ctx.notes["cost"] = cost.note
    return cost.usd


def _cost_per_1000(ctx: RunContext) -> float | None:
    usd, seen = ctx["cost_usd"], ctx["images_seen"]
    return usd / seen * 1000 if usd is not None and seen else None


def _derived(fn: Callable[[RunContext], float | None], source: str, series=None) -> Derived:
    return Derived(fn, source, series)


# -- the catalogue: summary-table order -------------------------------------------------

# Process-tree CPU, else the whole host's (% of all cores x cores = % of one core).
HOST_CPU = {"host_column": "host_cpu_percent", "per_core": True}


def _trained(ctx: RunContext) -> bool:
    """Whether the record has the workload's own log (a run_start): an import from sar and
    nvidia-smi has none, so how many attempts it took and what work was lost are unknown."""
    return bool(ctx.run.train.of("run_start"))


def _attempts(ctx: RunContext) -> float | None:
    if not _trained(ctx) and not ctx.meta.get("previous_attempts"):
        return None
    return float(len(attempt_spans(ctx.meta, ctx.run.samples))) or None


def _lost_iters(ctx: RunContext) -> float | None:
    return float(lost_iterations(ctx.run.train)) if _trained(ctx) else None


METRICS: tuple[Metric, ...] = (
    Metric(
        "time_to_train_s", "time to train", "s", LOWER,
        _derived(ts.sum_metric("time_to_train_s", lambda ctx: time_to_train(ctx.run.train)[0]),
                 ts.SUM_BY_KEY["time_to_train_s"].formula()),
        headline=True, in_runs_table=True,
    ),
    Metric(
        "images_per_s", "images/s, whole job (steady, median)", "img/s", HIGHER,
        _derived(_images_per_s, "train.jsonl train lines' images_per_s after warm-up",
                 tm.images_since_first_iteration),
        headline=True, in_runs_table=True,
        timeseries=TimeSeries("images_per_s", "Training throughput", "images/s", since="the first iteration"),
    ),
    # Per GPU: what compares jobs of different shapes (raw figures are for the whole job).
    Metric(
        "images_per_s_per_gpu", "images/s per GPU", "img/s/GPU", HIGHER,
        _derived(_per_gpu, "images/s / run.json shape.gpus"), headline=True,
    ),
    Metric(
        "gpu_hours", "GPU-hours per run", "GPU-h", LOWER,
        _derived(_gpu_hours, "run.json shape.gpus x wall time"), headline=True,
    ),
    Metric("images_per_s_iqr", "images/s IQR", "img/s", "", _derived(_images_per_s_iqr, "train.jsonl images_per_s")),
    Metric(
        "cpu_mean_pct", "CPU mean", "% of a core", "", Samples("proc_cpu_percent", "mean", "sum", **HOST_CPU),
        in_runs_table=True, timeseries=TimeSeries("cpu", "Process-tree CPU", "% of one core"),
    ),
    Metric("cpu_p95_pct", "CPU p95", "% of a core", "", Samples("proc_cpu_percent", "p95", "sum", **HOST_CPU)),
    # The whole host's utilisation as sar and top print it (100 - %idle): needs no core count.
    Metric(
        "host_cpu_util_pct", "host CPU utilisation mean", "% of the host", "",
        Samples("host_cpu_percent", "mean", "pool"), in_runs_table=True,
        timeseries=TimeSeries("host_cpu", "Host CPU utilisation (all logical CPUs)", "% of the host"),
    ),
    Metric(
        "peak_rss_gb", "peak RSS", "GB", LOWER,
        Samples("proc_rss_bytes", "max", "sum", scale=1e-9, host_column="host_mem_used_bytes"),
        in_runs_table=True, timeseries=TimeSeries("memory", "Process-tree resident memory", "GB"),
    ),
    Metric(
        "gpu_util_mean_pct", "GPU utilisation mean", "%", HIGHER, Samples(c.GPU_UTIL, "mean", "pool", per_gpu=True),
        headline=True, in_runs_table=True,
        timeseries=TimeSeries("gpu_util", "GPU utilisation (mean over the job's GPUs)", "%"),
    ),
    Metric(
        "gpu_mem_peak_gb", "peak GPU memory", "GiB", "", Samples(c.GPU_FB_USED, "max", "max", True, 1 / 1024),
        timeseries=TimeSeries("gpu_memory", "GPU memory used (sum over the job's GPUs)", "GiB", "sum"),
    ),
    Metric(
        "energy_wh", "GPU energy", "Wh", LOWER,
        _derived(_energy_wh, f"{c.GPU_ENERGY} counter, else {c.GPU_POWER} over time"),
        headline=True, in_runs_table=True,
    ),
    Metric(
        "cost_usd", "cost per run", "$", LOWER, _derived(_cost_usd, "run.json environment.cost, wall time, GPUs"),
        headline=True, in_runs_table=True,
    ),
    Metric(
        "cost_per_1000_images_usd", "cost per 1,000 images", "$", LOWER,
        _derived(_cost_per_1000, "cost per run / images seen"), headline=True,
    ),
    Metric(
        "queue_wait_s", "queue wait", "s", LOWER,
        _derived(tm.queue_wait, tm.QUEUE_SOURCE),
        headline=True, in_runs_table=True,
    ),
    Metric("startup_s", "start-up", "s", LOWER, _derived(ts.sum_metric("startup_s"),
           ts.SUM_BY_KEY["startup_s"].formula()), in_runs_table=True),
    # Neither phases nor sums of phases: in runs.csv, not the report's tables (cost and GPU-hours read wall_s)
    Metric("restart_startup_s", "warmup_s of resumed starts (train.jsonl, median)", "s", LOWER,
           _derived(lambda ctx: startup_s(ctx.run.train, restarts=True),
                    "train.jsonl warmup.warmup_s of resumed starts (compile cache warm), median"), in_summary=False),
    Metric("wall_s", "job wall time (cost basis)", "s", LOWER,
           _derived(_wall, "every attempt's start_time -> end_time"), in_summary=False),
    Metric("attempts", "attempts", "jobs", "", _derived(_attempts, "run.json previous_attempts + this one"),
           in_runs_table=True, digits=2),
    Metric("lost_iters", "lost work", "iterations", LOWER, _derived(_lost_iters,
           "train.jsonl: iterations trained again after a resume"), in_runs_table=True),
    # facts the advisor and cost read; in runs.csv, not in the summary table
    Metric("images_seen", "images seen", "images", "", _derived(lambda ctx: images_seen(ctx.run.train), "train.jsonl"),
           in_summary=False),
    Metric("cpu_limit_cores", "CPU allowance", "cores", "", _derived(_cpu_limit, "run.json hardware (cgroup, cores)"),
           in_summary=False),
    Metric("mem_limit_gb", "memory limit", "GB", "", _derived(_mem_limit_gb, "run.json hardware.cgroup"),
           in_summary=False),
    Metric("host_mem_gb", "machine memory", "GB", "",
           _derived(_host_mem_gb, "run.json hardware.memory_bytes, else host_mem_total_bytes"), in_summary=False),
    Metric("gpus", "GPUs", "GPUs", "",
           _derived(_gpus, "run.json shape.gpus, else the GPUs sampled, else hardware.gpus"), in_summary=False),
    Metric("nodes", "nodes", "nodes", "", _derived(_nodes, "run.json shape.nodes, else hosts"), in_summary=False),
    Metric("gpus_per_node", "GPUs per node", "GPUs", "",
           _derived(lambda ctx: None if ctx["gpus"] is None else ctx["gpus"] / (ctx["nodes"] or 1), "gpus / nodes"),
           in_summary=False),
    Metric("gpu_mem_total_gb", "GPU memory", "GiB", "", Samples(c.GPU_FB_TOTAL, "max", "max", True, 1 / 1024),
           in_summary=False),
    *fp.catalogue(Metric, _derived, HIGHER, LOWER),  # how close to the hardware: MFU, J/image, compiled
    *tm.catalogue(Metric, _derived, HIGHER, LOWER),  # where the time goes: the run's timeline
    # A samples column whose catalogue row names its figure (Column.metric): its mean, pooled
    # over the job's GPUs or hosts, so a new column's figure is its row in records/columns.py.
    *(Metric(col.metric, col.what, col.unit or "count", "", Samples(col.name, "mean", "pool", col in GPU_CATALOGUE))
      for col in CATALOGUE.values() if col.metric),
)  # fmt: skip
METRIC_BY_KEY = {m.key: m for m in METRICS}
HEADLINE = tuple(m.key for m in METRICS if m.headline)


def fmt(value: float | None, digits: int = 3) -> str:
    """Stable rounding for Markdown: fixed significant digits, no exponent for normal sizes."""
    if value is None or value != value:
        return "—"
    if value == 0:
        return "0"
    mag = abs(value)
    if mag >= 10**digits:
        return f"{value:,.0f}"
    decimals = max(0, digits - 1 - int(math.floor(math.log10(mag))))
    decimals = min(decimals, 6)
    text = f"{value:,.{decimals}f}"
    return "0" if float(text.replace(",", "")) == 0 and mag < 5e-7 else text


@dataclass
class RunMetrics:
    """One run's identity and its figures (`values`, keyed by catalogue key; read as attributes)."""

    env: str
    run_id: str
    status: str | None
    git_sha: str | None
    config_sha256: str | None
    start_time: float | None
    values: dict[str, float | None]
    cost_note: str = ""
    origins: dict[str, str] = field(default_factory=dict)  # key -> "host" where the figure is the whole machine's
    resolutions: dict[str, float] = field(default_factory=dict)  # key -> clock resolution (s) of a timed span
    notes: dict[str, str] = field(default_factory=dict)  # key -> why that figure is unknown (MFU: no peak, > 100 %)

    def __getattr__(self, key: str) -> float | None:
        values = self.__dict__.get("values")
        if values is not None and key in values:
            return values[key]
        raise AttributeError(key)

    def as_dict(self) -> dict[str, Any]:
        """runs.csv's columns: identity, every catalogue figure in order, where host-fallback figures came
        from (`<key>_source`: process or host), then the cost note."""
        ident = {k: getattr(self, k) for k in ("env", "run_id", "status", "git_sha", "config_sha256", "start_time")}
        sources = {f"{m.key}_source": self.origins.get(m.key) for m in METRICS if getattr(m.source, "host_column", 0)}
        return {**ident, **self.values, **sources, "cost_note": self.cost_note}

    def at_resolution(self, key: str) -> float | None:
        """The clock resolution when this figure is at or below it (shown "≤ 1 s"), else None."""
        res, value = self.resolutions.get(key), self.values.get(key)
        return res if res is not None and value is not None and value <= res else None

    def from_host(self, key: str) -> bool:
        """True when this figure is the whole machine's (host columns), not the job's."""
        return self.origins.get(key) == "host"


def run_metrics(run: RunData) -> RunMetrics:
    """Every catalogue figure of one run, from its record only (cost: its frozen rates)."""
    ctx = RunContext(run)
    values = {m.key: ctx[m.key] for m in METRICS}
    exit_info = ctx.section("exit")
    status = exit_info.get("status") or outcome(run.train)
    return RunMetrics(
        env=run.env,
        run_id=run.run_id,
        status=str(status) if status else None,
        git_sha=run.git_sha,
        config_sha256=run.config_sha256,
        start_time=run.start_time,
        values=values,
        cost_note=ctx.notes.get("cost", ""),
        origins=dict(ctx.origins),
        resolutions=dict(ctx.resolutions),
        notes=dict(ctx.notes),
    )
