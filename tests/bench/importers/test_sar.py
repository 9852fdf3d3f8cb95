"""`bench import --format sar`: sysstat 12.x text, both clocks, midnight, lost AM/PM."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from bench.importers import ParseOptions, parse_file
from bench.importers.series import ImportFault
from tests.bench.importers.conftest import SAMPLES, assert_valid_record, compared, one_error_line, sources

NY = ZoneInfo("America/New_York")
ROW = re.compile(r"^(\d\d):(\d\d):(\d\d)(?: ([AP]M))?\s+(\S+)\s+(.*)$")


def sar_rows(name: str, first: str) -> list[tuple[str, list[float]]]:
    """(time text, numbers) of the data rows whose first field is `first` ('all', an
    interface) or, with first='', of sar -r rows; read straight from the sample."""
    out = []
    for line in (SAMPLES / name).read_text().splitlines():
        m = ROW.match(line)
        if not m:
            continue
        fields = [m[5], *m[6].split()]
        if first and fields[0] == first:
            out.append((line[:11], [float(x) for x in fields[1:]]))
        elif not first and fields[0].isdigit():
            out.append((line[:11], [float(x) for x in fields]))
    return out


def test_sar_cpu_and_memory_reach_the_report_as_host_figures(tmp_path: Path, bench) -> None:
    results = tmp_path / "results"
    code, out, err = bench(
        "import",
        "--format",
        "sar",
        "--env",
        "satori",
        "--run-id",
        "sar1",
        "--results",
        results,
        "--timezone",
        "America/New_York",
        SAMPLES / "sar-u-r-12h.txt",
    )
    assert code == 0, err
    record = assert_valid_record(results / "satori" / "sar1")
    assert record["hosts"] == ["node0017"] and record["hardware"]["cpu_cores_logical"] == 160
    cpu = sar_rows("sar-u-r-12h.txt", "all")
    mem = sar_rows("sar-u-r-12h.txt", "")
    busy = np.array([100 - v[5] - v[3] for _, v in cpu])  # 100 - %idle - %iowait
    row = compared(bench, results, tmp_path / "cmp")["sar1"]
    assert float(row["cpu_mean_pct"]) == pytest.approx(busy.mean() * 160, rel=1e-4)
    assert float(row["cpu_p95_pct"]) == pytest.approx(np.percentile(busy, 95) * 160, rel=1e-4)
    assert float(row["peak_rss_gb"]) == pytest.approx(max(v[2] for _, v in mem) * 1024 / 1e9, rel=1e-5)
    assert row["cpu_mean_pct_source"] == row["cpu_p95_pct_source"] == row["peak_rss_gb_source"] == "host"
    # 60 samples 5 s apart from 11:57:36 PM to 12:02:31 AM the next day.
    assert float(row["wall_s"]) == pytest.approx(295.0)
    first = datetime(2024, 3, 14, 23, 57, 36, tzinfo=NY).timestamp()
    assert record["start_time"] == pytest.approx(first) and record["end_time"] == pytest.approx(first + 295)


def test_twelve_hour_clock_across_midnight(tmp_path: Path) -> None:
    s = parse_file("sar", SAMPLES / "sar-u-r-12h.txt", ParseOptions(timezone="America/New_York"))
    t = s.frame["time"].to_numpy()
    assert np.all(np.diff(t) == 5.0)  # no 24-hour step back at 12:00:01 AM
    assert datetime.fromtimestamp(t[-1], NY) == datetime(2024, 3, 15, 0, 2, 31, tzinfo=NY)
    assert "clock: 12-hour with AM/PM" in s.notes
    assert any("the next day" in n for n in s.notes)


def test_twenty_four_hour_clock_across_midnight_and_network() -> None:
    s = parse_file("sar", SAMPLES / "sar-net-24h.txt", ParseOptions())
    t = s.frame["time"].to_numpy()
    assert np.all(np.diff(t) == 5.0) and t[0] == datetime(2024, 3, 14, 23, 57, 36, tzinfo=ZoneInfo("UTC")).timestamp()
    assert "clock: 24-hour" in s.notes
    # rxkB/s summed over the interfaces but lo, in bytes/s
    by_time: dict[str, float] = {}
    for line in (SAMPLES / "sar-net-24h.txt").read_text().splitlines():
        f = line.split()
        if len(f) == 10 and f[1] not in ("lo", "IFACE") and ":" in f[0]:
            by_time[f[0]] = by_time.get(f[0], 0.0) + float(f[4]) * 1024
    assert s.frame["host_net_rx_bytes_per_s"].tolist() == pytest.approx(list(by_time.values()))


def test_lost_am_pm_is_half_a_day_not_a_day() -> None:
    s = parse_file("sar", SAMPLES / "sar-u-no-ampm.txt", ParseOptions())
    t = s.frame["time"].to_numpy()
    assert np.all(np.diff(t) == 5.0)  # 12:59:56 -> 01:00:01 is 5 s later, not 12 h earlier
    assert datetime.fromtimestamp(t[0], ZoneInfo("UTC")).strftime("%H:%M:%S") == "12:58:06"
    assert datetime.fromtimestamp(t[-1], ZoneInfo("UTC")).strftime("%H:%M:%S") == "13:01:01"
    assert "clock: 12-hour without AM/PM" in s.notes and any("half a day later" in n for n in s.notes)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sar.txt"
    path.write_text(text)
    return path


CPU_HEAD = "     CPU     %user     %nice   %system   %iowait    %steal     %idle\n"


def test_noon_with_am_pm_is_no_wrap_and_12_am_is_midnight(tmp_path: Path) -> None:
    text = (
        "Linux 6.1.0-18-amd64 (gpu-a) \t2024-03-14 \t_x86_64_\t(8 CPU)\n\n"
        f"11:59:53 AM{CPU_HEAD}"
        "11:59:58 AM     all     10.00      0.00      0.00      0.00      0.00     90.00\n"
        "12:00:03 PM     all     20.00      0.00      0.00      0.00      0.00     80.00\n"
    )
    t = parse_file("sar", _write(tmp_path, text), ParseOptions()).frame["time"].tolist()
    assert t[1] - t[0] == 5
    text = text.replace("11:59:58 AM", "12:00:03 AM").replace("12:00:03 PM", "12:00:08 AM")
    t = parse_file("sar", _write(tmp_path, text), ParseOptions()).frame["time"].tolist()
    assert datetime.fromtimestamp(t[0], ZoneInfo("UTC")) == datetime(2024, 3, 14, 0, 0, 3, tzinfo=ZoneInfo("UTC"))


@pytest.mark.parametrize(
    "date_text, day", [("2024-03-14", 14), ("03/14/2024", 14), ("14/03/2024", 14), ("03/14/24", 14), ("14.03.2024", 14)]
)
def test_header_dates_of_each_locale(tmp_path: Path, date_text: str, day: int) -> None:
    text = (
        f"Linux 6.1.0-18-amd64 (gpu-a) \t{date_text} \t_x86_64_\t(8 CPU)\n\n"
        f"10:00:00{CPU_HEAD}10:00:05     all      1.00      0.00      0.00      0.00      0.00     99.00\n"
    )
    s = parse_file("sar", _write(tmp_path, text), ParseOptions())
    assert datetime.fromtimestamp(s.frame["time"][0], ZoneInfo("UTC")) == datetime(
        2024, 3, day, 10, 0, 5, tzinfo=ZoneInfo("UTC")
    )
    assert s.host == "gpu-a"


def test_no_header_needs_date(tmp_path: Path) -> None:
    path = _write(
        tmp_path, f"10:00:00{CPU_HEAD}10:00:05     all      1.00      0.00      0.00      0.00      0.00     99.00\n"
    )
    with pytest.raises(ImportFault, match="pass --date"):
        parse_file("sar", path, ParseOptions())
    s = parse_file("sar", path, ParseOptions(date="2024-03-14"))
    assert s.frame["time"][0] == datetime(2024, 3, 14, 10, 0, 5, tzinfo=ZoneInfo("UTC")).timestamp()


@pytest.mark.parametrize(
    "bad, line, words",
    [
        (
            "12:00:06 AM     all     25.31      0.00      3.12      oops      0.00     71.17",
            10,
            "'oops' is not a number",
        ),
        ("12:00:06 AM     all     25.31      0.00      3.12      0.40", 10, "fields where the column line"),
        ("garbage in the middle", 10, "not a sar line"),
    ],
)
def test_malformed_file_names_file_and_line_and_writes_nothing(
    tmp_path: Path, bench, bad: str, line: int, words: str
) -> None:
    lines = (SAMPLES / "sar-u-r-12h.txt").read_text().splitlines()
    assert ROW.match(lines[9]) and "all" in lines[9]  # line 10 is a -u data row
    lines[9] = bad
    path = tmp_path / "broken-sar.txt"
    path.write_text("\n".join(lines) + "\n")
    results = tmp_path / "results"
    code, out, err = bench(
        "import",
        "--format",
        "sar",
        "--env",
        "satori",
        "--run-id",
        "x",
        "--results",
        results,
        SAMPLES / "sar-net-24h.txt",
        path,
    )
    assert code == 2
    one_error_line(err, f"{path}:{line}:", words)
    assert not results.exists()  # not even the env folder: nothing half-written


def test_sources_are_named_in_run_json(tmp_path: Path, bench) -> None:
    results = tmp_path / "r"
    code, _, err = bench(
        "import",
        "--format",
        "sar",
        "--env",
        "satori",
        "--run-id",
        "both",
        "--results",
        results,
        SAMPLES / "sar-u-r-12h.txt",
        SAMPLES / "sar-net-24h.txt",
    )
    assert code == 0, err
    record = assert_valid_record(results / "satori" / "both")
    src = sources(record)
    assert src["sar-u-r-12h.txt"]["time"] == "from the file" and src["sar-u-r-12h.txt"]["rows"] == 60
    assert "host_net_rx_bytes_per_s" in src["sar-net-24h.txt"]["columns"]
    assert record["import"]["clock"] == "absolute" and record["sample_interval_s"] == 5.0
