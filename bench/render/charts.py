"""Charts for reports (matplotlib, Agg, PNG).

Deterministic on purpose: same input, same bytes (no "Software"/date metadata, fixed
size and DPI), so CI commits of `reports/` are clean diffs. Long time series are
averaged into at most MAX_POINTS buckets so a 48-hour run stays a small file; the
bucket's min–max is drawn as a band behind the mean, so a stall to 0 % still shows as
one. Y axes start at zero (every series here is a rate, a share or an amount).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from bench.analysis.metrics import METRICS  # noqa: E402
from bench.records.read import RunData  # noqa: E402

MAX_POINTS = 400
DPI = 80
SIZE = (8, 3.6)
PNG_METADATA = {"Software": None}

# chart name -> the catalogue metric it draws (its `timeseries` says title and axis)
SERIES = {m.timeseries.name: m for m in METRICS if m.timeseries is not None}


def downsample(x: np.ndarray, y: np.ndarray, max_points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """Bucket means over equal time spans (keeps the shape, bounds the size)."""
    bx, mean, _, _ = downsample_band(x, y, max_points)
    return bx, mean


def downsample_band(
    x: np.ndarray, y: np.ndarray, max_points: int = MAX_POINTS
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x, mean, min, max) per bucket of equal time span: the mean keeps the shape, the
    min–max keeps what a mean would hide (a stall to 0 %, a spike)."""
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if x.size <= max_points:
        return x, y, y, y
    edges = np.linspace(x[0], x[-1], max_points + 1)
    idx = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, max_points - 1)
    counts = np.bincount(idx, minlength=max_points)
    sx = np.bincount(idx, weights=x, minlength=max_points)
    sy = np.bincount(idx, weights=y, minlength=max_points)
    lo = np.full(max_points, np.inf)
    hi = np.full(max_points, -np.inf)
    np.minimum.at(lo, idx, y)
    np.maximum.at(hi, idx, y)
    keep = counts > 0
    return sx[keep] / counts[keep], sy[keep] / counts[keep], lo[keep], hi[keep]


def series(run: RunData, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(seconds since the run's start, value) for one chart; empty when not recorded."""
    metric = SERIES.get(name)
    if metric is None:
        return np.empty(0), np.empty(0)
    return metric.source.series(run, metric.timeseries)


def from_host(run: RunData, name: str) -> bool:
    """True when this chart's line for `run` is the whole machine's (host columns)."""
    metric = SERIES.get(name)
    origin = getattr(metric.source, "origin", None) if metric is not None else None
    picked = origin(run) if origin is not None else None
    return picked is not None and picked[2] == "host"


_PENDING: list[tuple[int, plt.Figure, Path]] | None = None  # child pid, chart, file: inside `drawn_in_parallel`


def _write(fig: plt.Figure, path: Path) -> None:
    """Lay out (tight: the labels measured) and write one chart: most of its cost."""
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=DPI, metadata=PNG_METADATA)


def save(fig: plt.Figure, path: Path) -> None:
    """Lay out, rasterise and write one chart, and close it. Inside `drawn_in_parallel` a
    forked child does all of it (the layout too: it measures every label, a third of a
    chart's cost) while this process builds the next chart."""
    pending = _PENDING
    if pending is None:
        _write(fig, path)
        plt.close(fig)
        return
    while len(pending) >= (os.cpu_count() or 1):  # every core busy: wait for the oldest
        _wait(pending.pop(0))
    if threading.active_count() > 1:  # forking a threaded process is unsafe: draw here
        _write(fig, path)
        plt.close(fig)
        return
    pid = os.fork()
    if pid == 0:  # the child: write this chart, and nothing else
        code = 1
        try:
            _write(fig, path)
            code = 0
        finally:
            os._exit(code)
    pending.append((pid, fig, path))


def _wait(child: tuple[int, plt.Figure, Path]) -> None:
    """Reap one child; where it failed, write its chart here, so the real error (a full
    disk, say) is raised as it would be without children."""
    pid, fig, path = child
    _, status = os.waitpid(pid, 0)
    try:
        if os.waitstatus_to_exitcode(status) != 0 or not path.is_file():
            _write(fig, path)
    finally:
        plt.close(fig)


@contextmanager
def drawn_in_parallel() -> Iterator[None]:
    """Charts drawn inside this block are written by forked children, up to one per core
    (on Linux and macOS; elsewhere, or with other threads running, one after another):
    the report's eight charts are a third of its time. All are written when it ends."""
    global _PENDING
    if _PENDING is not None or not hasattr(os, "fork"):
        yield
        return
    _PENDING = []
    try:
        yield
    finally:
        pending, _PENDING = _PENDING, None
        try:
            while pending:
                _wait(pending.pop(0))
        finally:
            for pid, fig, _ in pending:  # after an error: reap the rest, raise the first
                os.waitpid(pid, 0)
                plt.close(fig)


def timeseries_chart(
    lines: dict[str, tuple[np.ndarray, np.ndarray]], name: str, path: Path, title: str | None = None
) -> bool:
    """One line per environment (bucket mean) over its min–max band; False (and no file)
    when no environment has data. The y axis starts at zero unless a value is negative,
    and then the axis label says so."""
    bands = {env: downsample_band(*xy) for env, xy in sorted(lines.items())}
    bands = {env: b for env, b in bands.items() if b[0].size}
    if not bands:
        return False
    title, ylabel = title or SERIES[name].timeseries.title, SERIES[name].timeseries.ylabel
    hours = max(float(b[0][-1]) for b in bands.values()) > 3 * 3600
    scale = 3600.0 if hours else 1.0
    fig, ax = plt.subplots(figsize=SIZE)
    for i, (env, (x, mean, lo, hi)) in enumerate(bands.items()):
        color = f"C{i}"
        ax.fill_between(x / scale, lo, hi, color=color, alpha=0.2, linewidth=0)
        ax.plot(x / scale, mean, label=env, linewidth=1, color=color)
    since = SERIES[name].timeseries.since
    ax.set_xlabel(f"hours since {since}" if hours else f"seconds since {since}")
    lowest = min(float(np.min(b[2])) for b in bands.values())
    if lowest >= 0:
        ax.set_ylim(bottom=0)
    else:
        ylabel += " (axis does not start at zero)"
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    save(fig, path)
    return True


def summary_bars(
    values: dict[str, dict[str, list[float]]],
    labels: dict[str, str],
    path: Path,
    below: dict[str, dict[str, float]] | None = None,
    lacked: dict[str, dict[str, str]] | None = None,
) -> bool:
    """metric -> env -> per-run values; bar = median, whiskers = min..max. A bar too low to
    see is written on: "≤ 1" where the median is at or below its clock's resolution
    (`below`: metric -> env -> resolution), "0" where it is zero, so no value reads as missing;
    an empty slot where the kind has no such phase says so (`lacked`: metric -> env -> "no scheduler")."""
    metrics = [m for m in values if any(len(v) for v in values[m].values())]
    if not metrics:
        return False
    cols = min(3, len(metrics))
    rows = (len(metrics) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.6 * rows), squeeze=False)
    for ax in axes.flat[len(metrics) :]:
        ax.axis("off")
    for ax, m in zip(axes.flat, metrics):
        envs = sorted(values[m])
        meds, lo, hi = [], [], []
        for e in envs:
            v = np.asarray(values[m][e], dtype=float)
            v = v[np.isfinite(v)]
            med = float(np.median(v)) if v.size else 0.0
            meds.append(med)
            lo.append(med - (v.min() if v.size else med))
            hi.append((v.max() if v.size else med) - med)
        ax.bar(range(len(envs)), meds, yerr=[lo, hi], capsize=3, color=[f"C{i}" for i in range(len(envs))])
        for i, e in enumerate(envs):
            res = (below or {}).get(m, {}).get(e)
            text = f"≤ {res:g}" if res is not None else "0" if meds[i] == 0 and values[m][e] else None
            if not values[m][e] and (lacked or {}).get(m, {}).get(e):
                text = lacked[m][e].replace(" ", "\n", 1)  # type: ignore[index]  # "no\nscheduler": fits one bar
            if text:
                ax.annotate(text, (i, 0), ha="center", va="bottom", fontsize="small")
        ax.set_xticks(range(len(envs)), envs, fontsize="small")
        ax.set_title(labels[m], fontsize="small")
        ax.grid(True, axis="y", alpha=0.3)
    save(fig, path)
    return True


HISTORY_TICKS = 40


def history_chart(points: Iterable[tuple[str, int, str, float]], path: Path) -> bool:
    """(env, commit position, short sha, median images/s) -> one line per environment."""
    pts = sorted(points)
    if not pts:
        return False
    fig, ax = plt.subplots(figsize=SIZE)
    ticks: dict[int, str] = {}
    for env in sorted({p[0] for p in pts}):
        mine = [p for p in pts if p[0] == env]
        ax.plot([p[1] for p in mine], [p[3] for p in mine], marker="o", label=env)
        for p in mine:
            ticks[p[1]] = p[2]
    # Every commit labelled up to HISTORY_TICKS; beyond, every k-th counted back from the
    # newest (hundreds of rotated labels overlap into a black band, and laying out each
    # label costs more than the rest of the chart).
    positions = sorted(ticks)
    shown = positions[::-1][:: -(-len(positions) // HISTORY_TICKS)][::-1]
    ax.set_xticks(shown, [ticks[k] for k in shown], rotation=45, fontsize="small")
    ax.set_title("images/s per environment across commits (median of runs)")
    ax.set_ylabel("images/s")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    save(fig, path)
    return True
