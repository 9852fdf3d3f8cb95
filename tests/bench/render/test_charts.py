"""Charts: bounded size for long series, identical bytes for identical input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.render.charts import MAX_POINTS, downsample, timeseries_chart


def test_downsample_bounds_points_and_keeps_the_mean() -> None:
    x = np.arange(172_800, dtype=float)  # 48 h at 1 Hz
    y = np.sin(x / 1000) + 5
    sx, sy = downsample(x, y)
    assert len(sx) <= MAX_POINTS and sx[0] < 500 and sx[-1] > 172_000
    assert abs(sy.mean() - y.mean()) < 0.01
    short = np.arange(10.0)
    assert np.array_equal(downsample(short, short)[1], short)


def test_nan_values_are_dropped() -> None:
    x = np.arange(5.0)
    y = np.array([1, np.nan, 3, np.nan, 5.0])
    assert list(downsample(x, y)[1]) == [1, 3, 5]


def test_same_series_same_png_bytes(tmp_path: Path) -> None:
    x = np.arange(5000.0)
    lines = {"b": (x, np.cos(x)), "a": (x, np.sin(x))}
    assert timeseries_chart(lines, "cpu", tmp_path / "one.png")
    assert timeseries_chart(dict(reversed(list(lines.items()))), "cpu", tmp_path / "two.png")
    assert (tmp_path / "one.png").read_bytes() == (tmp_path / "two.png").read_bytes()
    assert not timeseries_chart({"a": (np.empty(0), np.empty(0))}, "gpu_util", tmp_path / "none.png")
    assert not (tmp_path / "none.png").exists()


def test_the_band_keeps_a_stall_the_mean_hides() -> None:
    from bench.render.charts import downsample_band

    x = np.arange(172_800, dtype=float)
    y = np.full(x.size, 95.0)
    y[100_000:100_060] = 0.0  # a one-minute stall to 0 % in 48 hours
    _, mean, lo, hi = downsample_band(x, y)
    assert mean.min() > 40 and lo.min() == 0.0 and hi.max() == 95.0


def test_a_time_ordered_series_is_bucketed_as_any_series_is() -> None:
    """The slices of a series in time order (the fast path) give the buckets that looking up
    each point's bucket gives, gaps and missing values included; out of order, the lookup runs."""
    from bench.render.charts import _band_unordered, downsample_band

    rng = np.random.default_rng(7)
    x = np.cumsum(rng.exponential(1.0, 50_000))
    x[25_000:] += 1e5  # a long gap: empty buckets
    y = rng.normal(50, 10, x.size)
    y[::7] = np.nan
    ok = np.isfinite(y)
    looked_up = _band_unordered(x[ok], y[ok], np.linspace(x[ok][0], x[ok][-1], 401))
    sliced = downsample_band(x, y)
    assert 2 < len(sliced[0]) < 400  # some buckets were empty
    for a, b in zip(sliced, looked_up, strict=True):
        assert np.allclose(a, b, rtol=1e-12, atol=0)
    shuffled = rng.permutation(x.size)
    assert [len(a) for a in downsample_band(x[shuffled], y[shuffled])] == [len(b) for b in looked_up]


def test_rate_axes_start_at_zero_and_bands_are_drawn(tmp_path: Path, monkeypatch) -> None:
    import bench.render.charts as charts

    seen = []
    monkeypatch.setattr(charts, "save", lambda fig, path: seen.append(fig))
    x = np.arange(3000.0)
    assert charts.timeseries_chart({"a": (x, 123 + np.sin(x) * 7)}, "images_per_s", tmp_path / "c.png")
    ax = seen[-1].axes[0]
    assert ax.get_ylim()[0] == 0 and ax.collections  # zero-based axis, min–max band behind the line
    assert charts.timeseries_chart({"a": (x, np.sin(x))}, "images_per_s", tmp_path / "d.png")
    assert "does not start at zero" in seen[-1].axes[0].get_ylabel()


def test_an_environment_is_drawn_from_a_run_that_has_the_series(tmp_path: Path) -> None:
    """The median run of env b has no GPU columns; another of its runs has: b is drawn
    from that one, named in the note. Env c has no GPU at all: the note says so."""
    from bench.commands.report import write_report
    from tests.synthetic_records import RunSpec, write_run

    results = tmp_path / "results"
    for i, ips in enumerate((100.0, 110.0, 120.0)):
        write_run(results, RunSpec("a", f"a{i}", gpus=1, images_per_s=ips, seed=i, start=1.79e9 + i * 100))
        gpus = 0 if ips == 110.0 else 1  # the median run of b lacks the series
        write_run(results, RunSpec("b", f"b{i}", gpus=gpus, images_per_s=ips, seed=9 + i, start=1.79e9 + i * 100))
        write_run(results, RunSpec("c", f"c{i}", gpus=0, images_per_s=ips, seed=20 + i, start=1.79e9 + i * 100))
    text = write_report(results, tmp_path / "out").readme.read_text()
    gpu = text.split("(gpu_util.png)", 1)[1].split("![", 1)[0]
    assert "a: `a1`" in gpu and ("b: `b0`" in gpu or "b: `b2`" in gpu)
    assert "Missing: c (none of its compared runs recorded it)" in gpu
    cpu = text.split("(cpu.png)", 1)[1].split("![", 1)[0]
    assert "b: `b1`" in cpu and "Missing" not in cpu  # the median run where it has the series


def test_charts_drawn_by_forked_children_are_the_charts_drawn_here(tmp_path: Path) -> None:
    """Inside `drawn_in_parallel` the charts are queued and written by a child per core when
    the block ends: the same bytes as drawn one by one in this process, none missing."""
    from bench.render import charts

    x = np.arange(5000.0)
    series = {n: {"a": (x, np.sin(x / (i + 1)) + 2), "b": (x, np.cos(x) + 3)} for i, n in enumerate(charts.SERIES)}
    bars = {"images_per_s": {"a": [1.0, 2.0, 3.0], "b": [2.0, 2.5, 4.0]}}
    labels = {"images_per_s": "images/s"}

    def draw_all(folder: Path) -> None:
        folder.mkdir()
        for name, lines in series.items():
            assert charts.timeseries_chart(lines, name, folder / f"{name}.png")
        assert charts.summary_bars(bars, labels, folder / "summary.png")
        assert charts.history_chart([("a", 1, "abc1234", 5.0), ("a", 2, "def5678", 6.0)], folder / "history.png")

    with charts.drawn_in_parallel():
        draw_all(tmp_path / "children")
        assert not list((tmp_path / "children").iterdir())  # queued: drawn when the block ends
    draw_all(tmp_path / "here")
    names = sorted(p.name for p in (tmp_path / "here").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "children").iterdir()) and len(names) == len(series) + 2
    for name in names:
        assert (tmp_path / "children" / name).read_bytes() == (tmp_path / "here" / name).read_bytes(), name


@pytest.mark.parametrize("threads", [False, True], ids=["children", "another-thread-so-no-children"])
def test_a_chart_no_child_could_write_raises_the_real_error_here(tmp_path: Path, threads: bool) -> None:
    """A child that fails leaves its chart to the parent, which raises what went wrong
    (here: a folder that does not exist) as drawing without children would; the other
    charts are written. With another thread running (an xdist worker may have one) no child
    is forked and the charts are drawn here: the same (a flaky failure in CI when they were not)."""
    import threading

    from bench.render import charts

    x = np.arange(100.0)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    if threads:
        other.start()
    try:
        with pytest.raises(FileNotFoundError), charts.drawn_in_parallel():
            assert charts.timeseries_chart({"a": (x, x)}, "cpu", tmp_path / "cpu.png")
            assert charts.timeseries_chart({"a": (x, x)}, "memory", tmp_path / "no such folder" / "memory.png")
            assert charts.timeseries_chart({"a": (x, x)}, "gpu_util", tmp_path / "gpu_util.png")
    finally:
        stop.set()
    assert (tmp_path / "cpu.png").is_file() and (tmp_path / "gpu_util.png").is_file()


def test_queued_charts_are_built_in_children_not_here(tmp_path: Path) -> None:
    """The figures too are built by the children (this process only hands them out): each
    build runs in another process, at most one per core at a time."""
    import os
    import threading

    import pytest

    from bench.render import charts

    if not hasattr(os, "fork") or threading.active_count() > 1 or (os.cpu_count() or 1) < 2:
        pytest.skip("charts are drawn in this process here (no fork, other threads or one core)")

    def build(name: str):
        def make():
            (tmp_path / f"{name}.pid").write_text(str(os.getpid()))
            return charts.plt.figure(figsize=(1, 1))

        return make

    with charts.drawn_in_parallel():
        for name in "abcde":
            charts.draw(build(name), tmp_path / f"{name}.png")
    pids = {int((tmp_path / f"{name}.pid").read_text()) for name in "abcde"}
    assert os.getpid() not in pids and 1 <= len(pids) <= (os.cpu_count() or 1)
    assert all((tmp_path / f"{name}.png").is_file() for name in "abcde")


KILLED_REPORT = """
import os, sys, time
from pathlib import Path
from bench.render import charts
log = Path(sys.argv[1])
def build():
    with log.open("a") as fh:
        fh.write(f"{os.getpid()}\\n")
    time.sleep(60)
    return charts.plt.figure(figsize=(1, 1))
with charts.drawn_in_parallel():
    for name in "ab":
        charts.draw(build, log.parent / f"{name}.png")
"""


def test_a_killed_report_takes_its_chart_children_along(tmp_path: Path) -> None:
    """In a fresh interpreter (this worker may run threads, and then nothing forks)."""
    import os

    from tests.killed_parent import survivors

    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: the charts are drawn in the report's own process")
    script = tmp_path / "report.py"
    script.write_text(KILLED_REPORT)
    assert survivors(script, tmp_path / "children.log") == [], "a chart child outlived its killed report"
