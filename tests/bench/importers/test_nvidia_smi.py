"""`bench import --format nvidia-smi`: CSV with units or nounits, with or without
timestamp, 4 GPUs of which the job used 2 (`--gpus 0,1`)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from bench.importers import ParseOptions, parse_file
from tests.bench.importers.conftest import SAMPLES, assert_valid_record, compared, one_error_line, sources


def smi_rows(name: str) -> list[dict[str, str]]:
    with (SAMPLES / name).open() as fh:
        return list(csv.DictReader(fh, skipinitialspace=True))


def num(text: str) -> float:
    return float(text.split()[0])


def test_job_gpus_only_reach_the_figures(tmp_path: Path, bench) -> None:
    results = tmp_path / "results"
    code, out, err = bench(
        "import",
        "--format",
        "nvidia-smi",
        "--env",
        "satori",
        "--run-id",
        "job01",
        "--gpus",
        "0,1",
        "--results",
        results,
        SAMPLES / "nvidia-smi-units.csv",
    )
    assert code == 0, err
    assert "GPUs sampled: 0, 1, 2, 3; the job's: 0, 1" in out
    record = assert_valid_record(results / "satori" / "job01")
    assert record["import"]["gpus_sampled"] == [0, 1, 2, 3] and record["import"]["gpus_job"] == [0, 1]
    assert [g["index"] for g in record["hardware"]["gpus"]] == [0, 1]
    assert record["hardware"]["gpus"][0]["model"] == "Tesla V100-SXM2-32GB"
    assert record["hardware"]["gpus"][0]["memory_total_mib"] == 32510

    rows = smi_rows("nvidia-smi-units.csv")
    mine = [r for r in rows if r["index"] in ("0", "1")]
    util = np.array([num(r["utilization.gpu [%]"]) for r in mine])
    figures = compared(bench, results, tmp_path / "cmp")["job01"]
    assert float(figures["gpu_util_mean_pct"]) == pytest.approx(util.mean(), rel=1e-5)
    assert float(figures["gpu_mem_peak_gb"]) == pytest.approx(
        max(num(r["memory.used [MiB]"]) for r in mine) / 1024, rel=1e-5
    )
    assert int(figures["gpus"]) == 2
    # 60 samples 5 s apart; each sample's time is that of its first row (GPU 0)
    firsts = [r["timestamp"] for r in rows if r["index"] == "0"]
    assert float(figures["wall_s"]) == pytest.approx(295.0)
    assert len(firsts) == record["samples_rows"] == 60


def test_without_gpus_every_sampled_gpu_counts_and_says_so(tmp_path: Path, bench) -> None:
    results = tmp_path / "results"
    code, out, err = bench(
        "import",
        "--format",
        "nvidia-smi",
        "--env",
        "satori",
        "--run-id",
        "all4",
        "--results",
        results,
        SAMPLES / "nvidia-smi-units.csv",
    )
    assert code == 0, err
    assert "--gpus not given" in out
    record = assert_valid_record(results / "satori" / "all4")
    assert record["import"]["gpus_job"] is None and "import" not in record["facts_unknown"]
    util = np.array([num(r["utilization.gpu [%]"]) for r in smi_rows("nvidia-smi-units.csv")])
    figures = compared(bench, results, tmp_path / "cmp")["all4"]
    assert float(figures["gpu_util_mean_pct"]) == pytest.approx(util.mean(), rel=1e-5)


def test_na_cells_stay_empty() -> None:
    s = parse_file("nvidia-smi", SAMPLES / "nvidia-smi-units.csv", ParseOptions())
    power = s.frame["gpu3_DCGM_FI_DEV_POWER_USAGE"]
    assert power.isna().sum() == 1 and power.notna().sum() == 59  # the one [N/A] of the file


def test_nounits_without_timestamp_needs_and_uses_interval(tmp_path: Path, bench) -> None:
    results = tmp_path / "results"
    args = [
        "import",
        "--format",
        "nvidia-smi",
        "--env",
        "satori",
        "--run-id",
        "nu",
        "--results",
        results,
        "--gpus",
        "0,1",
        SAMPLES / "nvidia-smi-nounits.csv",
    ]
    code, _, err = bench(*args)
    assert code == 2
    one_error_line(err, "nvidia-smi-nounits.csv: has no time column: pass --interval S")
    assert not results.exists()
    code, _, err = bench(*args, "--interval", "2")
    assert code == 0, err
    record = assert_valid_record(results / "satori" / "nu")
    assert "aligned by row" in sources(record)["nvidia-smi-nounits.csv"]["time"]
    assert record["start_time"] is None and "start_time" in record["facts_unknown"]  # no date: not invented
    rows = [r for r in smi_rows("nvidia-smi-nounits.csv") if r["index"] in ("0", "1")]
    figures = compared(bench, results, tmp_path / "cmp")["nu"]
    assert float(figures["gpu_util_mean_pct"]) == pytest.approx(
        np.mean([num(r["utilization.gpu [%]"]) for r in rows]), rel=1e-5
    )
    assert float(figures["gpu_mem_peak_gb"]) == pytest.approx(
        max(num(r["memory.used [MiB]"]) for r in rows) / 1024, rel=1e-5
    )
    assert float(figures["wall_s"]) == pytest.approx(22.0)  # 12 samples, 2 s apart


def test_unknown_gpu_is_refused(tmp_path: Path, bench) -> None:
    code, _, err = bench(
        "import",
        "--format",
        "nvidia-smi",
        "--env",
        "e",
        "--run-id",
        "r",
        "--results",
        tmp_path / "r",
        "--gpus",
        "1,7",
        SAMPLES / "nvidia-smi-units.csv",
    )
    assert code == 2
    one_error_line(err, "--gpus names GPU(s) 7", "sampled: 0, 1, 2, 3")
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("cell, words", [("abc %", "'abc' is not a number"), ("31 furlongs", "unit 'furlongs'")])
def test_malformed_value_names_file_and_line(tmp_path: Path, bench, cell: str, words: str) -> None:
    lines = (SAMPLES / "nvidia-smi-units.csv").read_text().splitlines()
    fields = lines[41].split(", ")
    fields[3] = cell
    lines[41] = ", ".join(fields)
    path = tmp_path / "gpu.csv"
    path.write_text("\n".join(lines) + "\n")
    code, _, err = bench(
        "import", "--format", "nvidia-smi", "--env", "e", "--run-id", "r", "--results", tmp_path / "r", path
    )
    assert code == 2
    one_error_line(err, f"{path}:42:", words)
    assert not (tmp_path / "r").exists()


def test_rows_without_index_sharing_timestamps_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "noindex.csv"
    path.write_text("timestamp, utilization.gpu [%]\n2024/03/14 10:00:00.000, 3 %\n2024/03/14 10:00:00.000, 5 %\n")
    with pytest.raises(Exception, match="no index column"):
        parse_file("nvidia-smi", path, ParseOptions())


def test_a_file_of_only_na_is_refused(tmp_path: Path, bench) -> None:
    path = tmp_path / "na.csv"
    path.write_text("index, utilization.gpu [%]\n0, [N/A]\n1, [Not Supported]\n")
    code, _, err = bench(
        "import",
        "--format",
        "nvidia-smi",
        "--interval",
        "1",
        "--env",
        "e",
        "--run-id",
        "r",
        "--results",
        tmp_path / "r",
        path,
    )
    assert code == 2
    one_error_line(err, f"{path}: no values to import")
