"""`bench import --format dcgmi-dmon | dcgm-exporter`: DCGM field names map one to one."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from bench.importers import ParseOptions, parse_file
from bench.records.read import load_run
from tests.bench.importers.conftest import SAMPLES, assert_valid_record, compared, one_error_line, sources

PROM = re.compile(r'^(\w+)\{gpu="(\d+)".*\} (\S+) (\d+)$')


def dmon_rows(gpu: int) -> list[list[str]]:
    out = []
    for line in (SAMPLES / "dcgmi-dmon.txt").read_text().splitlines():
        f = line.split()
        if f[:2] == ["GPU", str(gpu)]:
            out.append(f[2:])  # GPUTL FBUSD FBTTL POWER TOTEC
    return out


def prom(metric: str, gpu: int) -> list[tuple[int, float]]:
    out = []
    for line in (SAMPLES / "dcgm-exporter.prom").read_text().splitlines():
        m = PROM.match(line)
        if m and m[1] == metric and m[2] == str(gpu):
            out.append((int(m[4]), float(m[3])))
    return out


def test_dmon_figures_of_the_job_gpu(tmp_path: Path, bench) -> None:
    results = tmp_path / "results"
    code, out, err = bench(
        "import",
        "--format",
        "dcgmi-dmon",
        "--env",
        "moc",
        "--run-id",
        "dm",
        "--interval",
        "1",
        "--gpus",
        "0",
        "--results",
        results,
        SAMPLES / "dcgmi-dmon.txt",
    )
    assert code == 0, err
    record = assert_valid_record(results / "moc" / "dm")
    assert record["import"]["gpus_sampled"] == [0, 1] and record["import"]["gpus_job"] == [0]
    assert record["hardware"]["gpus"][0]["memory_total_mib"] == 40960
    rows = dmon_rows(0)
    figures = compared(bench, results, tmp_path / "cmp")["dm"]
    assert float(figures["gpu_util_mean_pct"]) == pytest.approx(np.mean([float(r[0]) for r in rows]), rel=1e-5)
    assert float(figures["gpu_mem_peak_gb"]) == pytest.approx(max(float(r[1]) for r in rows) / 1024, rel=1e-5)
    energy_wh = (float(rows[-1][4]) - float(rows[0][4])) / 3.6e6  # TOTEC counter, mJ
    assert float(figures["energy_wh"]) == pytest.approx(energy_wh, rel=1e-5)
    assert float(figures["wall_s"]) == pytest.approx(len(rows) - 1)


def test_dmon_na_and_repeated_header() -> None:
    s = parse_file("dcgmi-dmon", SAMPLES / "dcgmi-dmon.txt", ParseOptions(interval_s=1.0))
    assert len(s.frame) == 20  # the header printed again after 10 samples starts no extra sample
    assert s.frame["gpu1_DCGM_FI_DEV_GPU_UTIL"].isna().sum() == 1  # the one N/A


def test_exporter_scrapes_with_timestamps(tmp_path: Path, bench) -> None:
    results = tmp_path / "results"
    code, out, err = bench(
        "import",
        "--format",
        "dcgm-exporter",
        "--env",
        "moc",
        "--run-id",
        "ex",
        "--gpus",
        "0",
        "--results",
        results,
        SAMPLES / "dcgm-exporter.prom",
    )
    assert code == 0, err
    record = assert_valid_record(results / "moc" / "ex")
    assert record["hosts"] == ["moc-gpu-worker-3"]
    gpu = record["hardware"]["gpus"][0]
    assert gpu["model"] == "NVIDIA A100-SXM4-40GB" and gpu["driver"] == "535.104.05" and gpu["uuid"].startswith("GPU-")
    assert "DCGM_FI_PROF_GR_ENGINE_ACTIVE" not in sources(record)["dcgm-exporter.prom"]["ignored"]  # a column now
    samples = load_run(results / "moc" / "ex").samples
    frame = samples[next(iter(samples))]
    gract = [v for _, v in prom("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0)]
    assert frame["gpu0_DCGM_FI_PROF_GR_ENGINE_ACTIVE"].tolist() == pytest.approx(gract)
    util, used, energy = (
        prom("DCGM_FI_DEV_GPU_UTIL", 0),
        prom("DCGM_FI_DEV_FB_USED", 0),
        prom("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 0),
    )
    figures = compared(bench, results, tmp_path / "cmp")["ex"]
    assert float(figures["gpu_util_mean_pct"]) == pytest.approx(np.mean([v for _, v in util]), rel=1e-5)
    assert float(figures["gpu_mem_peak_gb"]) == pytest.approx(max(v for _, v in used) / 1024, rel=1e-5)
    assert float(figures["energy_wh"]) == pytest.approx((energy[-1][1] - energy[0][1]) / 3.6e6, rel=1e-5)
    assert record["start_time"] == util[0][0] / 1000 and record["end_time"] == util[-1][0] / 1000
    free = prom("DCGM_FI_DEV_FB_FREE", 0)
    assert float(figures["gpu_mem_total_gb"]) == pytest.approx((used[0][1] + free[0][1]) / 1024, rel=1e-5)


def test_exporter_scrapes_without_timestamps_are_split_by_repetition(tmp_path: Path) -> None:
    text = re.sub(r" \d{13}$", "", (SAMPLES / "dcgm-exporter.prom").read_text(), flags=re.M)
    path = tmp_path / "curl-loop.prom"
    path.write_text(text)
    s = parse_file("dcgm-exporter", path, ParseOptions(interval_s=15))
    assert not s.timed and len(s.frame) == 12
    assert s.frame["gpu0_DCGM_FI_DEV_GPU_UTIL"].tolist() == [v for _, v in prom("DCGM_FI_DEV_GPU_UTIL", 0)]


@pytest.mark.parametrize(
    "fmt, name, line_no, bad, words",
    [
        ("dcgmi-dmon", "dcgmi-dmon.txt", 5, "GPU 0     55     18230  40960", "3 values where the column line has 5"),
        (
            "dcgmi-dmon",
            "dcgmi-dmon.txt",
            5,
            "GPU 0     55     18230  40960  2x2.1    812598653",
            "'2x2.1' is not a number",
        ),
        ("dcgm-exporter", "dcgm-exporter.prom", 4, 'DCGM_FI_DEV_SM_CLOCK{gpu="1" 210', "not a Prometheus sample line"),
    ],
)
def test_malformed_file_names_file_and_line(
    tmp_path: Path, bench, fmt: str, name: str, line_no: int, bad: str, words: str
) -> None:
    lines = (SAMPLES / name).read_text().splitlines()
    lines[line_no - 1] = bad
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    code, _, err = bench(
        "import",
        "--format",
        fmt,
        "--env",
        "moc",
        "--run-id",
        "r",
        "--interval",
        "1",
        "--results",
        tmp_path / "res",
        path,
    )
    assert code == 2
    one_error_line(err, f"{path}:{line_no}:", words)
    assert not (tmp_path / "res").exists()
