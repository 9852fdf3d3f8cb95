"""A figure's label says what was measured: the job's process tree, or the whole machine.

A record without process-tree columns (an import of sar, a spreadsheet) gives CPU and
memory from the host's columns instead (bench.analysis.metrics, `origins`). Its used
memory is the whole machine's, everything else it ran included: calling that "peak RSS"
names a measurement that was never taken. So a row or chart whose every figure came from
the host is labelled as the host's; a row that mixes both says so, and its host cells keep
the "(host)" mark (bench.render.tables.HOST_NOTE).
"""

from __future__ import annotations

from bench.analysis.metrics import METRIC_BY_KEY, RunMetrics

# catalogue key -> its label when the figure is the whole machine's (the keys with a host column)
HOST_LABELS = {
    "cpu_mean_pct": "host CPU mean (whole machine)",
    "cpu_p95_pct": "host CPU p95 (whole machine)",
    "peak_rss_gb": "peak host memory used (whole machine)",
}
# time-series key -> its chart title when every line is the whole machine's
HOST_TITLES = {"cpu": "Host CPU (whole machine)", "memory": "Host memory used (whole machine)"}


def measured_label(key: str, runs: list[RunMetrics]) -> str:
    """The label of `key` over these runs: the catalogue's, the host's when every known figure
    is the machine's, or both when they mix."""
    label = METRIC_BY_KEY[key].label
    known = [r for r in runs if r.values.get(key) is not None]
    host = sum(r.from_host(key) for r in known)
    if not host or key not in HOST_LABELS:
        return label
    return HOST_LABELS[key] if host == len(known) else f"{label}, or {HOST_LABELS[key]} where marked (host)"


def series_title(key: str, title: str, host_lines: int, lines: int) -> str:
    """A time-series chart's title: the process tree's, the host's, or both with the host lines marked."""
    if not host_lines:
        return title
    if host_lines == lines and key in HOST_TITLES:
        return HOST_TITLES[key]
    return f"{title}; lines marked (host): the whole machine"
