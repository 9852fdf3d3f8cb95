"""Charts for reports (matplotlib, Agg, PNG).

Deterministic on purpose: same input, same bytes (no "Software"/date metadata, fixed
size and DPI), so CI commits of `reports/` are clean diffs. Long time series are
averaged into at most MAX_POINTS buckets so a 48-hour run stays a small file; the
bucket's min–max is drawn as a band behind the mean, so a stall to 0 % still shows as
one. Y axes start at zero (every series here is a rate, a share or an amount).
"""

from __future__ import annotations

import functools
import gc
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from bench.analysis.metrics import METRICS  # noqa: E402
from bench.parent_death import dies_with  # noqa: E402
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
    if not (x[1:] >= x[:-1]).all():
        return _band_unordered(x, y, np.linspace(x.min(), x.max(), max_points + 1))
    edges = np.linspace(x[0], x[-1], max_points + 1)
    # In time order (a record's series always are), each bucket is one slice: its first
    # index where its span begins, and numpy reduces the slices (a third of the lookup's time).
    starts = np.searchsorted(x, edges[:-1], side="left")
    counts = np.diff(np.append(starts, x.size))
    starts, counts = starts[counts > 0], counts[counts > 0]  # an empty bucket has no slice
    return (
        np.add.reduceat(x, starts) / counts,
        np.add.reduceat(y, starts) / counts,
        np.minimum.reduceat(y, starts),
        np.maximum.reduceat(y, starts),
    )


def _band_unordered(
    x: np.ndarray, y: np.ndarray, edges: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`downsample_band` of points in any order: each one's bucket looked up."""
    max_points = edges.size - 1
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


# Charts queued inside `drawn_in_parallel`: (what builds the figure, its file)
_QUEUED: list[tuple[Callable[[], plt.Figure], Path]] | None = None


def _write(fig: plt.Figure, path: Path) -> None:
    """Lay out (tight: the labels measured) and write one chart: most of its cost."""
    fig.tight_layout()
    # tight_layout leaves a placeholder layout engine behind, and with any engine set savefig
    # draws the whole chart once more before it draws it for the file (a quarter of a chart's
    # cost, the same pixels): none.
    fig.set_layout_engine(None)
    fig.savefig(path, format="png", dpi=DPI, metadata=PNG_METADATA)


def _built(fig: plt.Figure) -> plt.Figure:
    return fig


def _close_built(queued: list[tuple[Callable[[], plt.Figure], Path]]) -> None:
    """Close (here) the charts that were queued already built (`save`): whoever wrote them."""
    for build, _ in queued:
        if isinstance(build, functools.partial) and build.func is _built:
            plt.close(build.args[0])


def save(fig: plt.Figure, path: Path) -> None:
    """Lay out, rasterise and write one chart already built, and close it; inside
    `drawn_in_parallel`, when the block ends, by a forked child."""
    if _QUEUED is not None:
        _QUEUED.append((functools.partial(_built, fig), path))
        return
    try:
        _write(fig, path)
    finally:
        plt.close(fig)


def draw(build: Callable[[], plt.Figure], path: Path, first: bool = False) -> None:
    """Build one chart (`build()`), lay it out, rasterise and write it, and close it. Inside
    `drawn_in_parallel` it is queued, and a forked child does all of it (the figure built
    there too) when the block ends; `first`: a long one, queued ahead of the others so that
    the children finish together."""
    if _QUEUED is not None:
        _QUEUED.insert(0 if first else len(_QUEUED), (build, path))
        return
    save(build(), path)


def _worker(queued: list[tuple[Callable[[], plt.Figure], Path]], jobs: int, done: int, parent: int) -> NoReturn:
    """A forked child: build and write the charts whose numbers it reads from `jobs`, one
    after another, and write each number to `done` once its file is written. It dies with
    the report (`PR_SET_PDEATHSIG`), so a killed report leaves no process drawing."""
    code = 1
    try:
        if not dies_with(parent):  # the report died before the child could ask
            return
        gc.disable()  # it lives for a few charts: a collection would only copy the parent's pages
        while len(job := os.read(jobs, 4)) == 4:
            build, path = queued[int.from_bytes(job, "little")]
            fig = build()
            _write(fig, path)
            plt.close(fig)
            os.write(done, job)
        code = 0
    finally:
        os._exit(code)


def _draw_queued(queued: list[tuple[Callable[[], plt.Figure], Path]]) -> None:
    """The queued charts drawn by forked children, one per core, each taking the next
    chart as it finishes one; the parent only hands them out and waits. Forked once every
    chart's numbers are computed: a parent that kept computing would write to memory its
    children share, each such page copied (copy-on-write); and a child per core rather
    than per chart forks, and copies what it touches, once. A chart no child wrote (one
    failed) is drawn here, so the real error (a full disk, say) is raised as it would be
    without children. With other threads running (forking them is unsafe), without fork
    or one core, drawn here one after another."""
    workers = min(len(queued), os.cpu_count() or 1)
    if not hasattr(os, "fork") or threading.active_count() > 1 or workers < 2:
        _draw_each(queued)
        return
    jobs_r, jobs_w = os.pipe()
    done_r, done_w = os.pipe()
    pids, written, parent = [], b"", os.getpid()
    try:
        for _ in range(workers):
            pid = os.fork()
            if pid == 0:
                os.close(jobs_w)
                os.close(done_r)
                _worker(queued, jobs_r, done_w, parent)
            pids.append(pid)
        os.close(done_w)
        done_w = -1
        todo = memoryview(b"".join(i.to_bytes(4, "little") for i in range(len(queued))))
        while todo:
            todo = todo[os.write(jobs_w, todo) :]
        os.close(jobs_w)  # the workers read to its end and stop
        jobs_w = -1
        while chunk := os.read(done_r, 4096):  # to its end: every worker has exited
            written += chunk
    finally:
        for fd in (jobs_r, jobs_w, done_r, done_w):
            if fd >= 0:
                os.close(fd)
        for pid in pids:
            os.waitpid(pid, 0)
    drawn = {int.from_bytes(written[i : i + 4], "little") for i in range(0, len(written), 4)}
    try:
        _draw_each([chart for i, chart in enumerate(queued) if i not in drawn])
    finally:
        _close_built(queued)


def _draw_each(charts: list[tuple[Callable[[], plt.Figure], Path]]) -> None:
    """Draw each chart here, one after another; a chart that fails does not cost the others:
    the first error is raised once they are all written, whichever path drew them."""
    error: Exception | None = None
    for build, path in charts:
        try:
            draw(build, path)
        except Exception as exc:
            error = error or exc
    if error is not None:
        raise error


@contextmanager
def drawn_in_parallel() -> Iterator[None]:
    """Charts drawn inside this block are queued, and written when it ends by forked
    children, one per core (on Linux and macOS; elsewhere, or with other threads running,
    one after another): the report's eight charts are a fifth of its CPU."""
    global _QUEUED
    if _QUEUED is not None:
        yield
        return
    _QUEUED = []
    try:
        yield
    except BaseException:
        _close_built(_QUEUED)  # nothing is drawn after an error
        raise
    finally:
        queued, _QUEUED = _QUEUED, None
    _draw_queued(queued)


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
    since = SERIES[name].timeseries.since
    lowest = min(float(np.min(b[2])) for b in bands.values())
    if lowest < 0:
        ylabel += " (axis does not start at zero)"

    def build() -> plt.Figure:
        fig, ax = plt.subplots(figsize=SIZE)
        for i, (env, (x, mean, lo, hi)) in enumerate(bands.items()):
            color = f"C{i}"
            ax.fill_between(x / scale, lo, hi, color=color, alpha=0.2, linewidth=0)
            ax.plot(x / scale, mean, label=env, linewidth=1, color=color)
        ax.set_xlabel(f"hours since {since}" if hours else f"seconds since {since}")
        if lowest >= 0:
            ax.set_ylim(bottom=0)
        ax.set_title(title)
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="best", fontsize="small")
        return fig

    draw(build, path)
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

    def build() -> plt.Figure:
        fig = plt.figure(figsize=(3.2 * cols, 2.6 * rows))
        grid = fig.add_gridspec(rows, cols)  # an axes per metric only: an empty slot would cost a panel's ticks
        for slot, m in enumerate(metrics):
            ax = fig.add_subplot(grid[slot // cols, slot % cols])
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
        return fig

    draw(build, path, first=True)  # a panel per headline metric: the longest chart to draw
    return True


HISTORY_TICKS = 40


def history_chart(points: Iterable[tuple[str, int, str, float]], path: Path) -> bool:
    """(env, commit position, short sha, median images/s) -> one line per environment."""
    pts = sorted(points)
    if not pts:
        return False
    envs = sorted({p[0] for p in pts})
    ticks = {p[1]: p[2] for env in envs for p in pts if p[0] == env}  # the last environment's sha wins, as drawn
    # Every commit labelled up to HISTORY_TICKS; beyond, every k-th counted back from the
    # newest (hundreds of rotated labels overlap into a black band, and laying out each
    # label costs more than the rest of the chart).
    positions = sorted(ticks)
    shown = positions[::-1][:: -(-len(positions) // HISTORY_TICKS)][::-1]

    def build() -> plt.Figure:
        fig, ax = plt.subplots(figsize=SIZE)
        for env in envs:
            mine = [p for p in pts if p[0] == env]
            ax.plot([p[1] for p in mine], [p[3] for p in mine], marker="o", label=env)
        ax.set_xticks(shown, [ticks[k] for k in shown], rotation=45, fontsize="small")
        ax.set_title("images/s per environment across commits (median of runs)")
        ax.set_ylabel("images/s")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="best", fontsize="small")
        return fig

    draw(build, path)
    return True
