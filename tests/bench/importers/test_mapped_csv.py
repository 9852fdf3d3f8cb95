"""`bench import --format csv --map MAP.yaml`: a spreadsheet export, any columns."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.bench.importers.conftest import SAMPLES, assert_valid_record, compared, one_error_line, sources


def study_column(name: str) -> list[float]:
    with (SAMPLES / "study-export.csv").open() as fh:
        return [float(r[name].replace(",", ".")) for r in csv.DictReader(fh, delimiter=";")]


def test_mapped_columns_units_and_scale(tmp_path: Path, bench) -> None:
    results = tmp_path / "results"
    code, out, err = bench(
        "import",
        "--format",
        "csv",
        "--map",
        SAMPLES / "study-MAP.yaml",
        "--env",
        "study2020",
        "--run-id",
        "s1",
        "--results",
        results,
        SAMPLES / "study-export.csv",
    )
    assert code == 0, err
    record = assert_valid_record(results / "study2020" / "s1")
    assert record["hosts"] == ["satori-node0042"] and record["hardware"]["cpu_cores_logical"] == 160
    assert sources(record)["study-export.csv"]["ignored"] == ["Notes"]
    figures = compared(bench, results, tmp_path / "cmp")["s1"]
    cpu = np.array(study_column("CPU busy (%)"))
    assert float(figures["cpu_mean_pct"]) == pytest.approx(cpu.mean() * 160, rel=1e-5)  # host % x cores
    assert float(figures["peak_rss_gb"]) == pytest.approx(max(study_column("RAM used (GB)")), rel=1e-5)  # GB
    assert float(figures["gpu_util_mean_pct"]) == pytest.approx(
        np.mean(study_column("GPU util (0-1)")) * 100, rel=1e-5
    )  # fraction -> %
    assert float(figures["wall_s"]) == pytest.approx(290.0)


def test_file_without_time_column_is_aligned_by_interval(tmp_path: Path, bench) -> None:
    mapping = yaml.safe_load((SAMPLES / "study-MAP.yaml").read_text())
    del mapping["time"]
    mapping["interval_s"] = 10
    mapping["start"] = "2020-06-02 09:30:00"
    map_path = tmp_path / "MAP.yaml"
    map_path.write_text(yaml.safe_dump(mapping))
    results = tmp_path / "results"
    code, _, err = bench(
        "import",
        "--format",
        "csv",
        "--map",
        map_path,
        "--env",
        "study2020",
        "--run-id",
        "s2",
        "--results",
        results,
        SAMPLES / "study-export.csv",
    )
    assert code == 0, err
    record = assert_valid_record(results / "study2020" / "s2")
    assert sources(record)["study-export.csv"]["time"].startswith("aligned by row")
    assert record["end_time"] - record["start_time"] == 290.0
    assert "Timestamp" in sources(record)["study-export.csv"]["ignored"]


@pytest.mark.parametrize(
    "edit, words",
    [
        (
            lambda m: m["columns"].update({"CPU busy (%)": {"to": "host_cpu"}}),
            "columns.CPU busy (%).to: 'host_cpu' is not",
        ),
        (
            lambda m: m["columns"].update({"RAM used (GB)": {"to": "host_mem_used_bytes", "unit": "W"}}),
            "'W' does not convert to B",
        ),
        (
            lambda m: m["columns"].update({"Swap (GB)": {"to": "host_mem_total_bytes", "unit": "GB_SI"}}),
            "no column 'Swap (GB)'",
        ),
    ],
)
def test_map_mistakes_are_one_line(tmp_path: Path, bench, edit, words: str) -> None:
    mapping = yaml.safe_load((SAMPLES / "study-MAP.yaml").read_text())
    edit(mapping)
    map_path = tmp_path / "MAP.yaml"
    map_path.write_text(yaml.safe_dump(mapping))
    code, _, err = bench(
        "import",
        "--format",
        "csv",
        "--map",
        map_path,
        "--env",
        "e",
        "--run-id",
        "r",
        "--results",
        tmp_path / "res",
        SAMPLES / "study-export.csv",
    )
    assert code == 2
    one_error_line(err, words)
    assert not (tmp_path / "res").exists()


def test_malformed_cell_names_file_and_line(tmp_path: Path, bench) -> None:
    lines = (SAMPLES / "study-export.csv").read_text().splitlines()
    cells = lines[12].split(";")
    cells[2] = "22,5 GB"
    lines[12] = ";".join(cells)
    path = tmp_path / "export.csv"
    path.write_text("\n".join(lines) + "\n")
    code, _, err = bench(
        "import",
        "--format",
        "csv",
        "--map",
        SAMPLES / "study-MAP.yaml",
        "--env",
        "e",
        "--run-id",
        "r",
        "--results",
        tmp_path / "res",
        path,
    )
    assert code == 2
    one_error_line(err, f"{path}:13:", "RAM used (GB): '22.5 GB' is not a number")
    assert not (tmp_path / "res").exists()


def test_csv_needs_a_map(tmp_path: Path, bench) -> None:
    code, _, err = bench(
        "import",
        "--format",
        "csv",
        "--env",
        "e",
        "--run-id",
        "r",
        "--results",
        tmp_path / "res",
        SAMPLES / "study-export.csv",
    )
    assert code == 2
    one_error_line(err, "needs --map MAP.yaml")


def test_iso_times_with_and_without_offset(tmp_path: Path, bench) -> None:
    data = tmp_path / "iso.csv"
    data.write_text("t,cpu\n2020-06-02T09:30:00-04:00,10\n2020-06-02 13:30:10,20\n")
    map_path = tmp_path / "MAP.yaml"
    map_path.write_text(
        yaml.safe_dump({"time": {"column": "t", "format": "iso"}, "columns": {"cpu": {"to": "host_cpu_percent"}}})
    )
    code, _, err = bench(
        "import",
        "--format",
        "csv",
        "--map",
        map_path,
        "--env",
        "e",
        "--run-id",
        "iso",
        "--results",
        tmp_path / "res",
        data,
    )
    assert code == 0, err
    record = assert_valid_record(tmp_path / "res" / "e" / "iso")
    assert record["end_time"] - record["start_time"] == 10.0  # the offset one and the UTC one (--timezone UTC)
    assert record["hosts"] is None and "hosts" in record["facts_unknown"]  # no file names a host
