"""Issue 22: imports never inflate wall time, never write an invalid value as 0, treat
counters as counters, refuse impossible indices and intervals, and leave unknown GPUs
unknown. Each bad input is one line (exit 2) or a named note, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.analysis.metrics import run_metrics
from bench.records.read import load_run
from tests.bench.importers.conftest import SAMPLES, one_error_line

SAR_HEAD = "Linux 5.14.0 (node1) \t03/14/2024 \t_x86_64_\t(8 CPU)\n\n"
SAR_COLS = "{t}     CPU     %user     %nice   %system   %iowait    %steal     %idle\n"
SMI_HEAD = "timestamp, index, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB], power.draw [W]\n"


def hms(seconds: int) -> str:
    seconds %= 86400
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def sar_file(path: Path, times: list[int], idle: list[str] | None = None) -> Path:
    idle = idle or ["90.00"] * len(times)
    rows = "".join(
        f"{hms(t)}     all      5.00      0.00      5.00      0.00      0.00     {i}\n" for t, i in zip(times, idle)
    )
    path.write_text(SAR_HEAD + SAR_COLS.format(t=hms(times[0] - 5)) + rows)
    return path


def smi_file(path: Path, times: list[float], index: str = "0") -> Path:
    def stamp(t: float) -> str:
        return f"2024/03/14 {hms(int(t))}.{int(t % 1 * 1000):03d}"

    rows = "".join(f"{stamp(t)}, {index}, Tesla V100, 50 %, 1000 MiB, 32510 MiB, 200.00 W\n" for t in times)
    path.write_text(SMI_HEAD + rows)
    return path


def imported(bench, tmp_path: Path, fmt: str, path: Path, *extra: str) -> tuple[int, str, str, Path]:
    results = tmp_path / "res"
    code, out, err = bench("import", "--format", fmt, "--env", "e", "--run-id", "r", "--results", results, *extra, path)
    return code, out, err, results / "e" / "r"


@pytest.mark.parametrize(
    "fmt, step",
    [("nvidia-smi", -3600), ("sar", -600), ("sar", -4 * 3600), ("nvidia-smi", 5 * 3600)],
    ids=["nvidia-smi-back-1h", "sar-back-10min", "sar-back-4h-read-as-next-day", "nvidia-smi-forward-5h"],
)
def test_a_clock_step_is_named_and_adds_no_wall_time(tmp_path: Path, bench, fmt: str, step: int) -> None:
    base = 14 * 3600  # 14:00, a 24-hour clock
    times = [base + 5 * i for i in range(10)] + [base + 45 + step + 5 * i for i in range(10)]
    path = (sar_file if fmt == "sar" else smi_file)(tmp_path / f"in-{fmt}", times)
    code, out, err, run_dir = imported(bench, tmp_path, fmt, path)
    assert code == 0, err
    assert "clock stepped" in out
    record = json.loads((run_dir / "run.json").read_text())
    assert record["end_time"] - record["start_time"] <= 20 * 5  # 20 samples 5 s apart, not hours
    wall = run_metrics(load_run(run_dir)).wall_s
    assert wall is not None and wall <= 100


@pytest.mark.parametrize("idle", ["nan", "inf", "150.00", "-5.00"])
def test_an_invalid_idle_is_dropped_not_written_as_zero_cpu(tmp_path: Path, bench, idle: str) -> None:
    times = [14 * 3600 + 5 * i for i in range(6)]
    path = sar_file(tmp_path / "in.sar", times, ["90.00", "90.00", idle, "90.00", "90.00", "90.00"])
    code, out, err, run_dir = imported(bench, tmp_path, "sar", path)
    assert code == 0, err
    cells = [line.split(",")[1] for line in (run_dir / "samples-node1.csv").read_text().splitlines()[1:]]
    assert cells[2] == "" and "0" not in cells[2:3]
    assert cells.count("10") == 5
    assert "dropped" in out


def test_an_energy_counter_reset_is_not_energy_from_last_minus_first(tmp_path: Path, bench) -> None:
    # 2 samples per second at 100 W -> +100 J per row; the counter restarts from 0 halfway (mJ)
    totals = [50_000_000 + 100_000 * i for i in range(5)] + [100_000 * i for i in range(1, 6)]
    lines = ["#Entity   POWER    TOTEC", "ID"] + [f"GPU 0     100.0  {t}" for t in totals]
    path = tmp_path / "dmon.txt"
    path.write_text("\n".join(lines) + "\n")
    code, out, err, run_dir = imported(
        bench, tmp_path, "dcgmi-dmon", path, "--interval", "1", "--start", "2024-03-14T14:00:00"
    )
    assert code == 0, err
    assert "reset" in out
    energy = run_metrics(load_run(run_dir)).energy_wh
    # monotonic segments: 4 steps of 100 J, then the counter's first reading after the reset
    # (100 J counted from 0) and 4 more steps = 900 J (issue 31: a reset must not lose its segment)
    assert energy == pytest.approx(900 / 3600)


def test_an_impossible_gpu_index_is_one_line(tmp_path: Path, bench) -> None:
    path = smi_file(tmp_path / "smi.csv", [14 * 3600 + i for i in range(5)], index="-1")
    code, _, err, run_dir = imported(bench, tmp_path, "nvidia-smi", path)
    assert code == 2
    one_error_line(err, "GPU index")
    assert not run_dir.exists()


@pytest.mark.parametrize("interval", ["1e-300", "nan", "inf", "1e9"])
def test_an_impossible_interval_is_one_line(tmp_path: Path, bench, interval: str) -> None:
    code, _, err, run_dir = imported(bench, tmp_path, "dcgmi-dmon", SAMPLES / "dcgmi-dmon.txt", "--interval", interval)
    assert code == 2
    one_error_line(err, "interval")
    assert not run_dir.exists()


def test_a_cpu_only_import_leaves_gpus_unknown(tmp_path: Path, bench) -> None:
    path = sar_file(tmp_path / "in.sar", [14 * 3600 + 5 * i for i in range(6)])
    code, _, err, run_dir = imported(bench, tmp_path, "sar", path)
    assert code == 0, err
    record = json.loads((run_dir / "run.json").read_text())
    assert record["hardware"]["gpus"] is None and "hardware.gpus" in record["facts_unknown"]
    m = run_metrics(load_run(run_dir))
    assert m.gpus is None and m.cpu_limit_cores is None  # the host's 8 cores are not the job's limit


@pytest.mark.parametrize("fmt", ["nvidia-smi", "csv"])
def test_a_csv_field_over_128_kib_is_one_line(tmp_path: Path, bench, fmt: str) -> None:
    path = tmp_path / f"big-{fmt}"
    if fmt == "nvidia-smi":
        path.write_text(SMI_HEAD + '2024/03/14 14:00:00.000, 0, "' + "x" * 200_000 + '", 5 %, 1 MiB, 2 MiB, 3 W\n')
        extra: tuple[str, ...] = ()
    else:
        path.write_text('Timestamp;CPU busy (%)\n02.06.2020 09:30:00;"' + "1" * 200_000 + '"\n')
        extra = ("--map", str(SAMPLES / "study-MAP.yaml"))
    code, _, err, run_dir = imported(bench, tmp_path, fmt, path, *extra)
    assert code == 2
    one_error_line(err, str(path))
    assert not run_dir.exists()


def test_a_tiny_memused_percent_is_no_overflow(tmp_path: Path, bench) -> None:
    text = (
        SAR_HEAD
        + "13:59:55 kbmemfree kbavail kbmemused %memused kbbuffers kbcached kbcommit %commit kbactive kbinact kbdirty\n"
        + "14:00:00 5865876 5949876 4104897 1e-300 2048 8980000 61000000 9.58 30000000 4000000 1201\n"
        + "14:00:05 5865876 5949876 4104897 6.45 2048 8980000 61000000 9.58 30000000 4000000 1201\n"
    )
    path = tmp_path / "mem.sar"
    path.write_text(text)
    code, _, err, run_dir = imported(bench, tmp_path, "sar", path)
    assert code == 0, err
    rows = (run_dir / "samples-node1.csv").read_text().splitlines()
    total = rows[0].split(",").index("host_mem_total_bytes")
    assert rows[1].split(",")[total] == "" and rows[2].split(",")[total] != ""


def test_a_csv_time_without_a_date_says_so(tmp_path: Path, bench) -> None:
    mapping = tmp_path / "map.yaml"
    mapping.write_text('time: {column: "T", format: "%H:%M:%S"}\ncolumns:\n  "CPU": {to: host_cpu_percent}\n')
    path = tmp_path / "t.csv"
    path.write_text("T,CPU\n09:30:00,10\n09:30:10,12\n")
    code, _, err, _ = imported(bench, tmp_path, "csv", path, "--map", str(mapping))
    assert code == 2
    one_error_line(err, "no date")
    assert "1900" not in err and "-2208" not in err
