"""Charts: bounded size for long series, identical bytes for identical input."""

from __future__ import annotations

from pathlib import Path

import numpy as np

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
