"""Mapped CSV maps: times of day with --date, several files of one run, derived columns,
and the mistakes refused before anything is written (bench.importers.csv_map, csv_time)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.bench.importers.conftest import assert_valid_record, one_error_line, sources


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def do_import(bench, tmp_path: Path, map_text: str, *files: Path, extra: tuple[str, ...] = ()):
    """(code, out, err, run folder) of `bench import --map` with the map's text."""
    map_path = write(tmp_path, "MAP.yaml", map_text)
    results = tmp_path / "res"
    code, out, err = bench(
        "import", "--map", map_path, "--env", "e", "--run-id", "r", "--results", results, *extra, *files
    )
    return code, out, err, results / "e" / "r"


def clock_sheet(times: list[str]) -> str:
    return "Time,%idle\n" + "".join(f"{t},{50 + i % 7}\n" for i, t in enumerate(times))


def test_time_of_day_needs_a_date(tmp_path: Path, bench) -> None:
    data = write(tmp_path, "cpu.csv", clock_sheet(["10:00:00", "10:01:00"]))
    map_text = 'time: {column: Time, format: "%H:%M:%S"}\nderived: {host_cpu_percent: "100 - `%idle`"}\n'
    code, _, err, run = do_import(bench, tmp_path, map_text, data)
    assert code == 2 and not run.exists()
    one_error_line(err, "time: format '%H:%M:%S' of column 'Time' has a time of day but no date", "--date")


@pytest.mark.parametrize(
    "fmt, times, hours",
    [
        ("%H:%M:%S", ["23:58:00", "23:59:00", "00:00:00", "00:01:00"], 3 / 60),  # 24-hour across midnight
        ("%H:%M:%S", ["11:40:00", "12:00:00", "12:20:00", "12:40:00", "01:00:00"], 80 / 60),  # 12-hour, no AM/PM
        ("%I:%M:%S", ["11:40:00", "12:00:00", "12:20:00", "12:40:00", "01:00:00"], 80 / 60),  # said to be 12-hour
        ("%I:%M:%S %p", ["11:59:00 PM", "12:00:00 AM", "12:30:00 AM"], 31 / 60),  # AM/PM across midnight
    ],
)
def test_times_of_day_wrap_as_sar_does(tmp_path: Path, bench, fmt: str, times: list[str], hours: float) -> None:
    data = write(tmp_path, "cpu.csv", clock_sheet(times))
    map_text = f'time: {{column: Time, format: "{fmt}"}}\nderived: {{host_cpu_percent: "100 - `%idle`"}}\n'
    code, _, err, run = do_import(bench, tmp_path, map_text, data, extra=("--date", "2026-03-02"))
    assert code == 0, err
    record = assert_valid_record(run)
    assert record["end_time"] - record["start_time"] == pytest.approx(hours * 3600)
    assert sources(record)["cpu.csv"]["time"] == "from the file"


def test_several_files_of_one_map_are_one_run(tmp_path: Path, bench) -> None:
    sheets = tmp_path / "sheets"
    sheets.mkdir()
    write(sheets, "cpu.csv", "Time,%user,%system,%idle\n10:00:00,20,5,75\n10:00:10,30,10,60\n")
    write(sheets, "gpu.csv", "GPU util,other\n0.5,1\n0.7,2\n")
    map_text = (
        "host: n1\nfiles:\n"
        "  - file: sheets/cpu.csv\n"
        '    time: {column: Time, format: "%H:%M:%S"}\n'
        '    derived: {host_cpu_percent: "`%user` + `%system`"}\n'
        "  - file: sheets/gpu.csv\n    interval_s: 10\n"
        '    columns: {"GPU util": {to: gpu0_DCGM_FI_DEV_GPU_UTIL, unit: fraction}}\n'
    )
    code, out, err, run = do_import(bench, tmp_path, map_text, extra=("--date", "2026-03-02"))
    assert code == 0, err
    record = assert_valid_record(run)
    assert sorted(sources(record)) == ["cpu.csv", "gpu.csv"] and record["samples_rows"] == 2
    samples = (run / record["samples_file"]).read_text().splitlines()
    assert samples[1].split(",")[1:] == ["25", "50"] and samples[2].split(",")[1:] == ["40", "70"]
    assert "ignored (not in the map or not read): other" in out
    assert "the map names no time column, and the file has none" in sources(record)["gpu.csv"]["time"]


def test_a_file_with_an_unused_time_column_is_not_said_to_have_none(tmp_path: Path, bench) -> None:
    data = write(tmp_path, "cpu.csv", "Timestamp,cpu\n2026-03-02 10:00:00,10\n2026-03-02 10:00:05,20\n")
    code, out, err, run = do_import(bench, tmp_path, "interval_s: 5\ncolumns: {cpu: host_cpu_percent}\n", data)
    assert code == 0, err
    how = sources(assert_valid_record(run))["cpu.csv"]["time"]
    assert "has no time column" not in how and "the file's 'Timestamp' left unused" in how
    assert "warning: 'Timestamp' look(s) like a time column" in out


def test_kb_is_sysstats_kibibyte_with_a_warning(tmp_path: Path, bench) -> None:
    data = write(tmp_path, "mem.csv", "t,kbmemused,MB_used\n0,1000,1\n1,1000,1\n")
    map_text = (
        "time: {column: t, format: unix}\ncolumns:\n"
        "  kbmemused: {to: host_mem_used_bytes, unit: kB}\n"
        "  MB_used: {to: host_mem_total_bytes, unit: MB_SI}\n"
    )
    code, out, err, run = do_import(bench, tmp_path, map_text, data)
    assert code == 0, err
    record = assert_valid_record(run)
    assert (run / record["samples_file"]).read_text().splitlines()[1] == "0,1024000,1000000"
    assert "warning: unit 'kB' read with the sysstat meaning, 1 kB = 1,024 bytes; write KiB" in out
    assert "MB_SI" not in out  # an unambiguous unit is not warned about


@pytest.mark.parametrize(
    "map_text, words",
    [
        ("columns: {cpu: host_cpu_percent}\ncolumns: {cpu: host_cpu_percent}\n", "key 'columns' appears twice"),
        (
            'columns: {cpu: host_cpu_percent}\nderived: {host_cpu_percent: "100 - cpu"}\n',
            "derived.host_cpu_percent: host_cpu_percent is already filled by columns.cpu",
        ),
        ("columns: {cpu: {to: host_cpu_percent, scale: -1}}\n", "columns.cpu.scale: -1 is not a number above 0"),
        ("columns: {cpu: {to: host_cpu_percent, scale: 0}}\n", "columns.cpu.scale: 0 is not a number above 0"),
        (
            'derived: {host_cpu_percent: "100 - idle"}\n',
            "derived.host_cpu_percent: '100 - idle' names 'idle', not a column of cpu.csv",
        ),
        ('derived: {host_cpu_percent: "5"}\n', "gives one value, not one per row"),
        ("columns: {cpu: host_cpu_percent}\ncolumn: {}\n", "unknown key(s) column"),
        ("time: {column: t, format: unix}\ncolumns: {cpu: {to: host_cpu_percent, unit: fraction}}\n", "outside"),
    ],
)
def test_map_mistakes_are_refused_with_one_line(tmp_path: Path, bench, map_text: str, words: str) -> None:
    data = write(tmp_path, "cpu.csv", "t,cpu\n0,10\n1,20\n")
    code, _, err, run = do_import(bench, tmp_path, map_text + ("" if "time" in map_text else "interval_s: 1\n"), data)
    assert code == 2 and not run.parent.exists()
    one_error_line(err, words)


def test_out_of_range_names_the_column_line_and_fix(tmp_path: Path, bench) -> None:
    data = write(tmp_path, "gpu.csv", "t,util\n0,0.5\n1,85\n")
    map_text = "time: {column: t, format: unix}\ncolumns: {util: {to: gpu0_DCGM_FI_DEV_GPU_UTIL, unit: fraction}}\n"
    code, _, err, _ = do_import(bench, tmp_path, map_text, data)
    assert code == 2
    one_error_line(
        err, f"{data}:3:", "columns.util gives gpu0_DCGM_FI_DEV_GPU_UTIL = 8500 %, outside its valid range 0..100 %"
    )


def test_two_files_filling_one_column_are_refused(tmp_path: Path, bench) -> None:
    entry = {"interval_s": 1, "columns": {"cpu": "host_cpu_percent"}}
    map_text = yaml.safe_dump({"files": [{"file": "a.csv", **entry}, {"file": "b.csv", **entry}]})
    code, _, err, _ = do_import(bench, tmp_path, map_text)
    assert code == 2
    one_error_line(err, "files[2].columns.cpu: host_cpu_percent is already filled by files[1].columns.cpu")


def test_a_map_with_files_takes_no_csv_file_and_files_are_needed(tmp_path: Path, bench) -> None:
    data = write(tmp_path, "cpu.csv", "cpu\n10\n")
    map_text = yaml.safe_dump({"files": [{"file": "cpu.csv", "interval_s": 1, "columns": {"cpu": "host_cpu_percent"}}]})
    code, _, err, _ = do_import(bench, tmp_path, map_text, data)
    assert code == 2
    one_error_line(err, "names its files (files:); give no csv FILE")
    code, _, err, _ = do_import(bench, tmp_path, "interval_s: 1\ncolumns: {cpu: host_cpu_percent}\n")
    assert code == 2
    one_error_line(err, "no files: give FILE(s), or a --map whose files: list")
