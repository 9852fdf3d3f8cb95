"""DCGM 4.6 names and profiling fields: a 4.6 dcgm-exporter scrape and a long `dcgmi dmon` log
(header repeated every 14 rounds, as dcgmi/DeviceMonitor.cpp prints it) import into the
record's columns, whose names stay the pre-4.6 ones (bench/importers/dcgm_names.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.importers import ParseOptions, parse_file
from bench.importers.dcgm_names import BY_TAG, FIELDS, record_column, record_field
from bench.records.columns import GPU_CATALOGUE
from bench.records.read import load_run
from tests.bench.importers.conftest import assert_valid_record, compared

HOST = "dgx-h100-07"
UUIDS = ["GPU-0c6a3f1e-77d2-4b1a-9f0e-1a2b3c4d5e6f", "GPU-9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"]
T0_MS = 1_785_000_000_000  # 2026-07-25, a DCGM 4.6 exporter's time
ROUNDS = 9


def scrape_values(gpu: int, i: int) -> dict[str, float]:
    """What GPU `gpu` reports at scrape `i`, by DCGM 4.6 name (units as 4.6 prints them)."""
    busy = gpu == 0
    return {
        "DCGM_FI_DEV_GPU_UTIL_RATIO": (88 + i % 5) if busy else 0,  # integer percent, _RATIO notwithstanding
        "DCGM_FI_DEV_MEM_COPY_UTIL": (31 + i) if busy else 0,
        "DCGM_FI_DEV_FB_USED": 61000 + 10 * i if busy else 0,
        "DCGM_FI_DEV_FB_FREE": 20000 - 10 * i if busy else 81000,
        "DCGM_FI_DEV_FB_RESERVED": 559,
        "DCGM_FI_DEV_BOARD_POWER_WATTS": (612.5 + i) if busy else 71.25,
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": 9_000_000_000 + i * 9_180_000 * (1 if busy else 0.12),
        "DCGM_FI_DEV_GPU_TEMP_CELSIUS": 61 if busy else 33,
        "DCGM_FI_DEV_SM_CLOCK": 1980 if busy else 345,
        "DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO": 0.93 if busy else 0.0,
        "DCGM_FI_PROF_SM_UTIL_RATIO": (0.41 + 0.01 * i) if busy else 0.0,
        "DCGM_FI_PROF_SM_OCCUPANCY_RATIO": 0.22 if busy else 0.0,
        "DCGM_FI_PROF_TENSOR_UTIL_RATIO": 0.17 if busy else 0.0,
        "DCGM_FI_PROF_DRAM_UTIL_RATIO": 0.35 if busy else 0.0,
        "DCGM_FI_DEV_PCIE_REPLAY_TOTAL": 0,  # a field the record has no column for
    }


def write_46_scrape(path: Path) -> None:
    """Prometheus text as a DCGM 4.6 dcgm-exporter serves it, federated with timestamps."""
    lines = []
    for i in range(ROUNDS):
        for gpu in (0, 1):
            labels = (
                f'gpu="{gpu}",UUID="{UUIDS[gpu]}",pci_bus_id="00000000:{0x18 + gpu:02X}:00.0",'
                f'device="nvidia{gpu}",modelName="NVIDIA H100 80GB HBM3",Hostname="{HOST}",'
                'DCGM_FI_DRIVER_VERSION="580.65.06"'
            )
            for name, value in scrape_values(gpu, i).items():
                if i == 0:
                    lines.append(f"# HELP {name} {name}.")
                    lines.append(f"# TYPE {name} gauge")
                lines.append(f"{name}{{{labels}}} {value} {T0_MS + i * 15_000}")
    path.write_text("\n".join(lines) + "\n")


def test_dcgm_46_exporter_scrape_imports_under_the_record_names(tmp_path: Path, bench) -> None:
    scrape = tmp_path / "dcgm-4.6.prom"
    write_46_scrape(scrape)
    results = tmp_path / "results"
    code, _, err = bench(
        "import", "--format", "dcgm-exporter", "--env", "h100", "--run-id", "new-names", "--gpus", "0",
        "--results", results, scrape,
    )  # fmt: skip
    assert code == 0, err
    record = assert_valid_record(results / "h100" / "new-names")
    assert record["hardware"]["gpus"][0]["model"] == "NVIDIA H100 80GB HBM3"
    frame = next(iter(load_run(results / "h100" / "new-names").samples.values()))
    scraped = scrape_values(0, 0)
    for new, column in ((f.new, f.column) for f in FIELDS if f.column in {c.name for c in GPU_CATALOGUE}):
        if new in scraped:
            expected = [scrape_values(0, i)[new] for i in range(ROUNDS)]
            assert frame[f"gpu0_{column}"].tolist() == pytest.approx(expected), new
    total = scraped["DCGM_FI_DEV_FB_USED"] + scraped["DCGM_FI_DEV_FB_FREE"] + scraped["DCGM_FI_DEV_FB_RESERVED"]
    assert frame["gpu0_DCGM_FI_DEV_FB_TOTAL"].iloc[0] == total  # the exporter has no FB_TOTAL: its parts add up
    assert not any("RATIO" in c or "WATTS" in c or "CELSIUS" in c for c in frame.columns)
    figures = compared(bench, results, tmp_path / "cmp")["new-names"]
    util = [scrape_values(0, i)["DCGM_FI_DEV_GPU_UTIL_RATIO"] for i in range(ROUNDS)]
    assert float(figures["gpu_util_mean_pct"]) == pytest.approx(np.mean(util), rel=1e-5)  # percent, not x100
    energy = [scrape_values(0, i)["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"] for i in range(ROUNDS)]
    assert float(figures["energy_wh"]) == pytest.approx((energy[-1] - energy[0]) / 3.6e6, rel=1e-5)


def write_long_dmon(path: Path, rounds: int, tags: list[str]) -> list[list[float]]:
    """A `dcgmi dmon -e ...` log of `rounds` rounds over GPUs 0 and 1, its two header lines
    printed again every 14 rounds, ended by a signal; GPU 0's values per round."""
    header = "#Entity           " + "".join(f"{t:<16}" for t in tags)
    units = "ID                " + "".join(f"{'W' if t == 'POWER' else '':<16}" for t in tags)
    lines = [header, units]
    gpu0 = []
    for r in range(rounds):
        if r and r % 14 == 0:
            lines += [header, units]
        for gpu in (0, 1):
            values = [float((r * 7 + k * 3 + gpu) % 100) if t not in BY_TAG or k < 3 else 0.01 * ((r + k) % 100)
                      for k, t in enumerate(tags)]  # fmt: skip
            if gpu == 0:
                gpu0.append(values)
            lines.append(f"GPU {gpu:<14}" + "".join(f"{v:<16g}" for v in values))
    lines += ["", "", "dmon was stopped due to receiving a signal"]
    path.write_text("\n".join(lines) + "\n")
    return gpu0


def test_long_dmon_log_with_repeated_headers_and_profiling_tags(tmp_path: Path) -> None:
    tags = ["GPUTL", "FBUSD", "POWER", "GRACT", "SMACT", "SMOCC", "TENSO", "DRAMA"]
    log = tmp_path / "dmon.txt"
    gpu0 = write_long_dmon(log, 100, tags)
    assert (log.read_text().count("#Entity")) == 1 + 99 // 14  # the header came back 7 times
    s = parse_file("dcgmi-dmon", log, ParseOptions(interval_s=1.0))
    assert len(s.frame) == 100  # a repeated header starts no sample
    for k, tag in enumerate(tags):
        assert s.frame[f"gpu0_{BY_TAG[tag]}"].tolist() == pytest.approx([row[k] for row in gpu0]), tag
    assert not [i for i in s.ignored if "dmon" in i]  # the stop line is the end, not an entity


def test_dmon_column_named_by_a_46_field_name(tmp_path: Path) -> None:
    log = tmp_path / "dmon.txt"
    log.write_text("#Entity   DCGM_FI_DEV_GPU_UTIL_RATIO  FBUSD\nID\nGPU 0     77    1000\nGPU 0     79    1001\n")
    s = parse_file("dcgmi-dmon", log, ParseOptions(interval_s=2.0))
    assert s.frame["gpu0_DCGM_FI_DEV_GPU_UTIL"].tolist() == [77, 79]


def test_names_table_agrees_with_the_catalogue() -> None:
    """A field the table names keeps its catalogue row's tag; a catalogue column it does not
    name (its name never changed) is taken under its own name, so a new column needs no row here."""
    catalogue = {col.name: col for col in GPU_CATALOGUE}
    for f in FIELDS:
        assert f.column not in catalogue or catalogue[f.column].dmon == f.tag, f.column
    assert all(record_field(col.name) == col.name for col in GPU_CATALOGUE)
    assert record_field("DCGM_FI_DEV_BOARD_POWER_WATTS") == "DCGM_FI_DEV_POWER_USAGE"
    assert record_field("DCGM_FI_PROF_SM_UTIL_RATIO") == "DCGM_FI_PROF_SM_ACTIVE"
    assert record_column("gpu3_DCGM_FI_DEV_GPU_UTIL_RATIO") == "gpu3_DCGM_FI_DEV_GPU_UTIL"
    assert record_column("host_cpu_percent") == "host_cpu_percent"
    assert len({f.field_id for f in FIELDS}) == len(FIELDS)


def test_mapped_csv_target_may_use_a_46_name(tmp_path: Path) -> None:
    sheet = tmp_path / "gpu.csv"
    sheet.write_text("t,util,smact\n1785000000,91,0.30\n1785000010,93,0.32\n")
    mapping = {
        "time": {"column": "t", "format": "unix"},
        "columns": {
            "util": {"to": "gpu0_DCGM_FI_DEV_GPU_UTIL_RATIO"},
            "smact": {"to": "gpu0_DCGM_FI_PROF_SM_UTIL_RATIO"},
        },
    }
    s = parse_file("csv", sheet, ParseOptions(mapping=mapping, map_path=tmp_path / "MAP.yaml"))
    assert s.frame["gpu0_DCGM_FI_DEV_GPU_UTIL"].tolist() == [91, 93]
    assert s.frame["gpu0_DCGM_FI_PROF_SM_ACTIVE"].tolist() == pytest.approx([0.30, 0.32])
