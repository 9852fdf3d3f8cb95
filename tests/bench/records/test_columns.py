"""The samples catalogue (bench/records/columns.py): every part that handles a column derives
from its row, so the expected values here come from the catalogue, not from constants."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench.importers.dcgm import DMON_TAGS
from bench.importers.series import GPU_FIELD_UNITS, HOST_COLUMNS
from bench.in_job.gpus import NVML_READERS
from bench.records import contract as c
from bench.records.check import samples_problems
from bench.records.columns import CATALOGUE, COUNTER, GAUGE, GPU_CATALOGUE, HOST_CATALOGUE, column_of
from tests.synthetic_records import RunSpec, write_run

BOUNDED = [col for col in HOST_CATALOGUE + GPU_CATALOGUE if col.low is not None or col.high is not None]


def test_the_csv_header_and_units_are_the_catalogues() -> None:
    assert c.BASE_COLUMNS == [col.name for col in HOST_CATALOGUE]
    assert c.GPU_FIELDS == tuple((col.name, col.unit) for col in GPU_CATALOGUE)
    assert GPU_FIELD_UNITS == {col.name: col.unit for col in GPU_CATALOGUE}
    assert set(HOST_COLUMNS) <= set(CATALOGUE)
    assert DMON_TAGS == {col.dmon: col.name for col in GPU_CATALOGUE if col.dmon}
    assert all(col.kind in (GAUGE, COUNTER) for col in CATALOGUE.values())
    assert column_of("gpu12_DCGM_FI_DEV_GPU_UTIL") is CATALOGUE[c.GPU_UTIL] and column_of("gpux_nope") is None


def test_every_gpu_column_has_an_nvml_reader() -> None:
    assert sorted(NVML_READERS) == sorted(col.name for col in GPU_CATALOGUE if col.source == "nvml")


def test_the_synthetic_writer_gives_each_column_its_catalogue_value(tmp_path: Path) -> None:
    spec = RunSpec("synth", "r1", gpus=2, duration_s=10)
    run_dir = write_run(tmp_path, spec)
    df = pd.read_csv(next(run_dir.glob("samples-*.csv")))
    drawn = {"time", "proc_cpu_percent", "proc_rss_bytes", "host_cpu_percent", c.GPU_UTIL, c.GPU_MEM_COPY_UTIL}
    for name in df.columns:
        col = column_of(name)
        assert col is not None, name
        if col.name in drawn or col.synthetic is None:
            continue
        values = df[name].to_numpy(dtype=float)
        if col.kind == COUNTER:  # rises at the catalogue's rate per second
            assert np.allclose(np.diff(values) / spec.interval_s, col.synthetic, rtol=1e-3), name
        else:
            assert np.allclose(values, col.synthetic, rtol=1e-5), name


@pytest.mark.parametrize("col", BOUNDED, ids=lambda col: col.name)
def test_bench_check_holds_each_bounded_column_to_its_range(col) -> None:
    name = f"gpu0_{col.name}" if col in GPU_CATALOGUE else col.name
    outside = (col.high * (8 if col.high_per_core else 1) + 1e6) if col.high is not None else col.low - 1
    inside = col.low if col.low is not None else 0.0
    df = pd.DataFrame({"time": [1.0, 2.0], name: [inside, outside]})
    problems = samples_problems("samples-x.csv", df, {"hardware": {"cpu_cores_logical": 8}})
    assert any(name in p and "outside" in p for p in problems), problems
    assert df[name].iloc[0] == inside and np.isnan(df[name].iloc[1])  # the impossible value is excluded
