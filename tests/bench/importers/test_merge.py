"""Several files of one run: joined on time, untimed ones placed by row and interval."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.errors import AtlasError
from bench.importers import ParseOptions, parse_file
from bench.importers.merge import merge
from tests.bench.importers.conftest import SAMPLES, assert_valid_record, sources

OPTS = ParseOptions(timezone="America/New_York")


def test_timed_files_join_on_time_without_inventing_values() -> None:
    sar = parse_file("sar", SAMPLES / "sar-u-r-12h.txt", OPTS)
    smi = parse_file("nvidia-smi", SAMPLES / "nvidia-smi-units.csv", OPTS)
    merged = merge([sar, smi], gpus=[0, 1])
    ((host, df),) = merged.hosts.items()
    assert host == "node0017" and len(df) == len(sar.frame) + len(smi.frame)  # no shared instants
    assert np.all(np.diff(df["time"]) > 0)
    # a row holds what was sampled at that instant, nothing else (no interpolation)
    assert df["host_cpu_percent"].notna().sum() == 60 and df["gpu0_DCGM_FI_DEV_GPU_UTIL"].notna().sum() == 60
    assert not (df["host_cpu_percent"].notna() & df["gpu0_DCGM_FI_DEV_GPU_UTIL"].notna()).any()
    assert merged.gpus_sampled == [0, 1, 2, 3] and merged.gpus_job == [0, 1]


def test_untimed_file_is_aligned_to_the_first_timed_sample() -> None:
    sar = parse_file("sar", SAMPLES / "sar-u-r-12h.txt", OPTS)
    smi = parse_file("nvidia-smi", SAMPLES / "nvidia-smi-nounits.csv", ParseOptions(interval_s=5))
    merged = merge([sar, smi])
    df = merged.hosts["node0017"]
    gpu_times = df.loc[df["gpu0_DCGM_FI_DEV_GPU_UTIL"].notna(), "time"].to_numpy()
    assert gpu_times[0] == sar.frame["time"].min() and np.all(np.diff(gpu_times) == 5)
    assert merged.sources[1]["time"].startswith("aligned by row")


def test_same_column_from_two_files_is_named() -> None:
    sar = parse_file("sar", SAMPLES / "sar-u-r-12h.txt", OPTS)
    merged = merge([sar, parse_file("sar", SAMPLES / "sar-u-r-12h.txt", OPTS)])
    assert any("host_cpu_percent is also in sar-u-r-12h.txt" in n for n in merged.sources[1]["notes"])
    assert len(merged.hosts["node0017"]) == 60


def test_files_of_several_hosts_need_host_for_a_nameless_one() -> None:
    a = parse_file("sar", SAMPLES / "sar-u-r-12h.txt", OPTS)
    b = parse_file("dcgm-exporter", SAMPLES / "dcgm-exporter.prom", OPTS)
    c = parse_file("nvidia-smi", SAMPLES / "nvidia-smi-units.csv", OPTS)
    assert sorted(merge([a, b]).hosts) == ["moc-gpu-worker-3", "node0017"]  # one samples file per host
    with pytest.raises(AtlasError, match="names no host.*--host"):
        merge([a, b, c])
    assert list(merge([a, b, c], host="n1").hosts) == ["n1"]


def test_two_hosts_give_two_samples_files(tmp_path: Path, bench) -> None:
    results = tmp_path / "r"
    code, _, err = bench(
        "import",
        "--env",
        "e",
        "--run-id",
        "two",
        "--results",
        results,
        "sar:" + str(SAMPLES / "sar-u-r-12h.txt"),
        "dcgm-exporter:" + str(SAMPLES / "dcgm-exporter.prom"),
    )
    assert code == 0, err
    record = assert_valid_record(results / "e" / "two")
    assert record["hosts"] == ["moc-gpu-worker-3", "node0017"]
    assert sorted(p.name for p in (results / "e" / "two").glob("samples-*.csv")) == [
        "samples-moc-gpu-worker-3.csv",
        "samples-node0017.csv",
    ]
    assert sources(record)["dcgm-exporter.prom"]["host"] == "moc-gpu-worker-3"


def test_existing_run_is_never_overwritten(tmp_path: Path, bench) -> None:
    args = [
        "import",
        "--format",
        "sar",
        "--env",
        "e",
        "--run-id",
        "once",
        "--results",
        tmp_path / "r",
        SAMPLES / "sar-u-r-12h.txt",
    ]
    assert bench(*args)[0] == 0
    before = (tmp_path / "r" / "e" / "once" / "run.json").read_bytes()
    code, _, err = bench(*args)
    assert code == 2 and "already exists: records are immutable" in err
    assert (tmp_path / "r" / "e" / "once" / "run.json").read_bytes() == before
