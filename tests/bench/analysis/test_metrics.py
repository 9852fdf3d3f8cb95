"""The metric catalogue: well-formed, and a new report metric really is one entry."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench.analysis.metrics import HEADLINE, HIGHER, LOWER, METRIC_BY_KEY, METRICS, Samples, fmt, run_metrics
from bench.records.read import load_run
from tests.synthetic_records import RunSpec, write_run

ROOT = Path(__file__).resolve().parents[3]
# The whole change that adds a report metric from a column the sampler already records.
NEW_ENTRY = """    Metric("gpu_temp_mean_c", "GPU temperature mean", "°C", LOWER,
           Samples(c.GPU_TEMP, "mean", "pool", True),
           timeseries=TimeSeries("gpu_temp", "GPU temperature (mean over the job's GPUs)", "°C")),
"""


def test_catalogue_is_well_formed():
    assert len(METRIC_BY_KEY) == len(METRICS)
    charts = [m.timeseries.name for m in METRICS if m.timeseries]
    assert len(charts) == len(set(charts))
    for m in METRICS:
        assert m.label and m.unit and m.direction in (HIGHER, LOWER, ""), m
    assert set(HEADLINE) <= set(METRIC_BY_KEY)
    assert all(METRIC_BY_KEY[k].direction for k in HEADLINE), "a headline metric must say which way is better"


def test_figures_of_a_synthetic_run(tmp_path: Path):
    cloud = {"model": "cloud", "usd_per_gpu_hour": 1.0}  # frozen into run.json at collection
    spec = RunSpec(env="e", run_id="r", gpus=2, gpu_util=70.0, queue_wait_s=12.0, cost=cloud)
    run = load_run(write_run(tmp_path, spec), "e")
    m = run_metrics(run)
    assert m.gpus == 2 and abs(m.gpu_util_mean_pct - 70.0) < 2
    assert m.gpu_mem_peak_gb == 12000.0 / 1024 and m.gpu_mem_total_gb == 32.0
    assert m.queue_wait_s == 12.0 and m.wall_s == 60.0
    assert abs(m.cost_usd - 2 * 60 / 3600) < 1e-9 and "cloud" in m.cost_note
    assert list(m.as_dict())[-1] == "cost_note" and set(METRIC_BY_KEY) <= set(m.as_dict())


def test_samples_source_reduces_over_time_then_across():
    import pandas as pd

    from bench.records.read import RunData

    df = pd.DataFrame({"time": [0.0, 1.0, 2.0], "proc_rss_bytes": [1.0, 3.0, 2.0]})
    ctx = SimpleNamespace(run=RunData(run_id="r", env="e", path=Path("."), samples={"a": df, "b": df * 2}))
    assert Samples("proc_rss_bytes", "max", "sum").value(ctx) == 3.0 + 6.0
    assert Samples("proc_rss_bytes", "max", "max").value(ctx) == 6.0
    assert Samples("no_such_column").value(ctx) is None


def test_fmt_is_stable():
    assert [fmt(None), fmt(0), fmt(1234.6), fmt(0.012345)] == ["—", "0", "1,235", "0.0123"]


@pytest.mark.slow
def test_a_new_metric_is_one_catalogue_entry(tmp_path: Path):
    """Add NEW_ENTRY to a copy of the package: the report gains its table row, chart and column."""
    shutil.copytree(ROOT / "bench", tmp_path / "bench", ignore=shutil.ignore_patterns("__pycache__"))
    source = tmp_path / "bench/analysis/metrics.py"
    text = source.read_text()
    assert text.count(")  # fmt: skip") == 1
    source.write_text(text.replace(")  # fmt: skip", NEW_ENTRY + ")  # fmt: skip"))
    for env in ("a", "b"):
        for i in range(3):
            write_run(tmp_path / "results", RunSpec(env=env, run_id=f"{env}{i}", gpus=1, seed=i))
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    p = subprocess.run(
        [sys.executable, "-m", "bench", "report", "--results", "results", "--out", "reports"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    (folder,) = [d for d in (tmp_path / "reports").iterdir() if d.is_dir()]
    readme = (folder / "README.md").read_text()
    assert "| GPU temperature mean | °C | 60.0 | 60.0 | 60.0 | 60.0 |" in readme  # summary table row
    assert "![GPU temperature (mean over the job's GPUs)](gpu_temp.png)" in readme  # its chart
    assert (folder / "gpu_temp.png").stat().st_size > 1000
    rows = list(csv.DictReader((folder / "runs.csv").open()))
    assert {r["gpu_temp_mean_c"] for r in rows} == {"60"}
    assert "GPU temperature mean" not in (ROOT / "bench/analysis/metrics.py").read_text()


# The catalogue row of a made-up samples column that names its own figure (its reader,
# bench/in_job/gpus.py, is the other half of the change; synthetic runs need none).
NEW_ROW = """    Column("DCGM_FI_PROF_ATLAS_DEMO", "ratio", "nvml", GAUGE, 0.0, 1.0, 0.4, "demo activity", "DEMOA",
           metric="demo_activity_mean"),
"""


@pytest.mark.slow
def test_a_new_column_with_its_figure_is_one_catalogue_row(tmp_path: Path):
    """Add NEW_ROW to a copy of the package: synthetic runs carry the column, `bench check`
    holds it to its range, and the report gains its figure, from that row alone."""
    shutil.copytree(ROOT / "bench", tmp_path / "bench", ignore=shutil.ignore_patterns("__pycache__"))
    source = tmp_path / "bench/records/columns.py"
    text = source.read_text()
    anchor = "GPU_CATALOGUE: tuple[Column, ...] = (\n"
    assert text.count(anchor) == 1
    source.write_text(text.replace(anchor, anchor + NEW_ROW))
    # the copy's bench first; the synthetic writer (tests/synthetic_records.py) from the checkout
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    write = (
        "from pathlib import Path\nfrom tests.synthetic_records import RunSpec, write_run\n"
        "for env in ('a', 'b'):\n    for i in range(3):\n"
        "        write_run(Path('results'), RunSpec(env=env, run_id=f'{env}{i}', gpus=1, seed=i))\n"
    )
    run = {"cwd": tmp_path, "env": env, "capture_output": True, "text": True, "timeout": 300}
    assert subprocess.run([sys.executable, "-c", write], **run).returncode == 0
    samples = next((tmp_path / "results" / "a" / "a0").glob("samples-*.csv")).read_text().splitlines()
    assert "gpu0_DCGM_FI_PROF_ATLAS_DEMO" in samples[0].split(",")
    check = subprocess.run([sys.executable, "-m", "bench", "check", "results/a/a0"], **run)
    assert check.returncode == 0, check.stdout + check.stderr
    p = subprocess.run([sys.executable, "-m", "bench", "report", "--results", "results", "--out", "reports"], **run)
    assert p.returncode == 0, p.stderr
    (folder,) = [d for d in (tmp_path / "reports").iterdir() if d.is_dir()]
    assert "| demo activity | ratio | 0.400 | 0.400 | 0.400 | 0.400 |" in (folder / "README.md").read_text()
    figures = [float(r["demo_activity_mean"]) for r in csv.DictReader((folder / "runs.csv").open())]
    assert len(figures) == 6 and all(abs(f - 0.4) < 1e-9 for f in figures)  # the row's synthetic value
