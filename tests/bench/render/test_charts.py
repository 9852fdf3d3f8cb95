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
