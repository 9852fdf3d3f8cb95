"""Issue 31's import cases: each one took a value silently or crashed before.

A DCGM field named twice (old and 4.6 name, or one dmon tag twice) is refused naming
both; rows all at one time are no 0 s run; a map is read with a bound named in the
error; a `csv:` option that is not one character is one line; an env.yaml number that
validate refuses is refused by `bench import --env` too (bench.environments.numbers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.commands.validation import check_env
from bench.environments import load as bench_envs
from tests.bench.importers.conftest import one_error_line


def imported(bench, tmp_path: Path, *argv: str | Path) -> tuple[int, str, Path]:
    results = tmp_path / "res"
    code, _, err = bench("import", "--env", "e", "--run-id", "r", "--results", results, *argv)
    return code, err, results


@pytest.mark.parametrize(
    "column_line, words",
    [
        (
            "#Entity GPUTL DCGM_FI_DEV_GPU_UTIL_RATIO",
            "GPUTL and DCGM_FI_DEV_GPU_UTIL_RATIO are both DCGM_FI_DEV_GPU_UTIL",
        ),
        ("#Entity GPUTL GPUTL", "GPUTL appears twice DCGM_FI_DEV_GPU_UTIL"),
        ("#Entity POWER DCGM_FI_DEV_BOARD_POWER_WATTS", "POWER and DCGM_FI_DEV_BOARD_POWER_WATTS are both"),
    ],
)
def test_a_dmon_field_given_twice_is_refused_naming_both(tmp_path: Path, bench, column_line: str, words: str):
    data = tmp_path / "dmon.txt"
    data.write_text(f"{column_line}\nID\nGPU 0 10 20\nGPU 0 30 40\n")
    code, err, results = imported(bench, tmp_path, "--format", "dcgmi-dmon", "--interval", "1", data)
    assert code == 2 and not results.exists()
    one_error_line(err, "dmon.txt:1:", words, "keep one of them")


def test_an_exporter_field_under_its_old_and_new_name_is_refused(tmp_path: Path, bench):
    data = tmp_path / "scrape.prom"
    data.write_text('DCGM_FI_DEV_GPU_UTIL{gpu="0"} 10\nDCGM_FI_DEV_GPU_UTIL_RATIO{gpu="0"} 20\n')
    code, err, results = imported(bench, tmp_path, "--format", "dcgm-exporter", "--interval", "1", data)
    assert code == 2 and not results.exists()
    one_error_line(err, "scrape.prom:2:", "DCGM_FI_DEV_GPU_UTIL and DCGM_FI_DEV_GPU_UTIL_RATIO are both")


def test_rows_all_at_one_time_are_not_a_zero_second_run(tmp_path: Path, bench):
    data = tmp_path / "cpu.csv"
    data.write_text("t,cpu\n1790000000,10\n1790000000,30\n1790000000,40\n")
    (tmp_path / "MAP.yaml").write_text("time: {column: t, format: unix}\ncolumns: {cpu: host_cpu_percent}\n")
    code, err, results = imported(bench, tmp_path, "--map", tmp_path / "MAP.yaml", data)
    assert code == 2 and not results.exists()
    one_error_line(err, "cpu.csv: all 3 rows carry one time", "length is unknown (not 0 s)")


def test_a_map_is_read_with_a_bound_named_in_the_error(tmp_path: Path, bench):
    data = tmp_path / "cpu.csv"
    data.write_text("t,cpu\n0,10\n1,20\n")
    code, err, results = imported(bench, tmp_path, "--map", "/dev/zero", data)  # endless without a bound
    assert code == 2 and not results.exists()
    one_error_line(err, "/dev/zero: larger than 1 MiB, the bound for an import map")


@pytest.mark.parametrize(
    "csv_options, words",
    [
        ('{delimiter: ";;"}', "csv.delimiter: ';;' must be one character"),
        ("{delimiter: 5}", "csv.delimiter: '5' must be one character"),
        ('{decimal: ""}', "csv.decimal: '' must be one character"),
        ('{delimiter: ",", decimal: ","}', "delimiter and decimal are both ','"),
        ('";"', "csv: give {delimiter"),
    ],
)
def test_csv_options_are_one_character_or_one_clear_error(tmp_path: Path, bench, csv_options: str, words: str):
    data = tmp_path / "cpu.csv"
    data.write_text("t,cpu\n0,10\n1,20\n")
    (tmp_path / "MAP.yaml").write_text(
        f"csv: {csv_options}\ntime: {{column: t, format: unix}}\ncolumns: {{cpu: host_cpu_percent}}\n"
    )
    code, err, results = imported(bench, tmp_path, "--map", tmp_path / "MAP.yaml", data)
    assert code == 2 and not results.exists()
    one_error_line(err, "MAP.yaml:", words)


@pytest.mark.parametrize(
    "shape_line, key",
    [
        ("shape: {nodes: 1, gpus_per_node: 0, cpus_per_gpu: .nan}", "shape.cpus_per_gpu"),
        ("shape: {nodes: 1, gpus_per_node: 0, memory_gib_per_gpu: .inf}", "shape.memory_gib_per_gpu"),
        ("hardware: {memory_gb: .nan}", "hardware.memory_gb"),
    ],
)
def test_env_numbers_refused_by_validate_are_refused_by_import(
    tmp_path: Path, bench, monkeypatch: pytest.MonkeyPatch, shape_line: str, key: str
):
    clusters = tmp_path / "clusters"
    (clusters / "e").mkdir(parents=True)
    (clusters / "e" / "env.yaml").write_text(f"kind: local\nlocal: true\n{shape_line}\n")
    monkeypatch.setattr(bench_envs, "CLUSTERS_DIR", clusters)
    data = tmp_path / "cpu.csv"
    data.write_text("t,cpu\n0,10\n1,20\n")
    (tmp_path / "MAP.yaml").write_text("time: {column: t, format: unix}\ncolumns: {cpu: host_cpu_percent}\n")
    code, err, results = imported(bench, tmp_path, "--map", tmp_path / "MAP.yaml", data)
    assert code == 2 and not results.exists()
    one_error_line(err, f"{key} must be a number", "bench validate lists every problem")
    problems = check_env("e", clusters)
    assert [p for p in problems if key in p], problems  # validate says so too, once
    assert len([p for p in problems if key in p]) == 1, problems


@pytest.mark.parametrize(
    "map_text, words",
    [
        ("interval_s: 1.0e+308\ncolumns: {cpu: host_cpu_percent}\n", "interval_s: 1e+308 is greater than the maximum"),
        ("interval_s: .nan\ncolumns: {cpu: host_cpu_percent}\n", "interval_s: nan is not a finite number"),
        (
            "interval_s: 1\ncolumns: {cpu: host_cpu_percent}\nhardware: {cpu_cores_logical: -5}\n",
            "hardware.cpu_cores_logical: -5 is less than the minimum of 1",
        ),
        (
            "files:\n  - file: cpu.csv\n    interval_s: 1\n    columns: {cpu: {to: host_cpu_percent, scale: .inf}}\n",
            "files[1].columns.cpu.scale: inf is not a number above 0",
        ),
    ],
)
def test_the_map_schema_refuses_what_the_hand_checks_let_through(
    tmp_path: Path, bench, map_text: str, words: str
) -> None:
    data = tmp_path / "cpu.csv"
    data.write_text("t,cpu\n0,10\n1,20\n")
    (tmp_path / "MAP.yaml").write_text(map_text)
    files = () if "files:" in map_text else (data,)
    code, err, results = imported(bench, tmp_path, "--map", tmp_path / "MAP.yaml", *files)
    assert code == 2 and not results.exists()
    one_error_line(err, "MAP.yaml:", words)
