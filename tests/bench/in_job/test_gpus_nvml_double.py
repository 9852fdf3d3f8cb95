"""GPU selection and fault handling, driven through a pynvml double (no GPU here)."""

from __future__ import annotations

import sys

import pytest

from bench.in_job.gpm import GPM_METRICS
from bench.in_job.gpus import GpuProbe
from bench.records import contract as c
from bench.records.contract import FIELD_NAMES
from tests.bench.in_job import nvml_double

# What the double's GPU 0 answers, per column it has a call for.
DOUBLE_VALUES = {
    c.GPU_UTIL: 90,
    c.GPU_MEM_COPY_UTIL: 40,
    c.GPU_FB_USED: 1024,
    c.GPU_FB_TOTAL: 32768,
    c.GPU_POWER: 250.5,
    c.GPU_ENERGY: 1_000_000,
    c.GPU_TEMP: 60,
    c.GPU_SM_CLOCK: 1530,
}


@pytest.fixture(autouse=True)
def fake_nvml(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "pynvml", nvml_double)
    nvml_double.state.update(init=0, util_calls=0, fail_after=None, gpm_samples=0, gpm_freed=0)
    yield nvml_double


@pytest.mark.parametrize(
    "visible, hosts", [(None, [0, 1]), ("1", [1]), ("GPU-2222", [1]), ("1,0", [1, 0]), ("GPU-11111111-aaaa,7", [0])]
)
def test_visible_devices_are_matched(visible: str | None, hosts: list[int]) -> None:
    probe = GpuProbe(visible=visible)
    probe.start()
    assert [g["host_index"] for g in probe.info] == hosts
    assert [g["index"] for g in probe.info] == list(range(len(hosts)))
    assert probe.info[0]["driver"] == "550.54" and probe.info[0]["memory_total_mib"] == 32768
    if visible and visible.endswith(",7"):
        assert "names GPU 7, host has 2" in probe.faults[0]["message"]


def test_unsupported_field_is_empty_and_recorded_once() -> None:
    probe = GpuProbe(visible=None)
    probe.start()
    rows = [probe.sample() for _ in range(3)]
    n = len(FIELD_NAMES)
    gpu0 = dict(zip(FIELD_NAMES, rows[0][:n]))  # by column name: a new catalogue column moves nothing here
    assert {name: gpu0[name] for name in DOUBLE_VALUES} == DOUBLE_VALUES
    assert rows[0][n + FIELD_NAMES.index(c.GPU_POWER)] is None  # GPU 1 power: not supported
    known = [f["source"] for f in probe.faults if f["source"].split(".", 1)[1] in DOUBLE_VALUES]
    assert known == ["gpu1.DCGM_FI_DEV_POWER_USAGE"]  # once, though sampled three times


def test_lost_gpu_mid_run_keeps_sampling() -> None:
    nvml_double.state["fail_after"] = 2
    probe = GpuProbe(visible="0")
    probe.start()
    first, second = probe.sample(), probe.sample()
    util, used = FIELD_NAMES.index(c.GPU_UTIL), FIELD_NAMES.index(c.GPU_FB_USED)
    assert first[util] == 90 and second[util] is None and second[used] == 1024  # memory still read
    assert any("GPU is lost" in f["message"] for f in probe.faults)


def test_profiling_fields_through_gpm_where_the_gpu_has_it() -> None:
    """GPU 0 has GPM: from the second sample on, the five ratios (NVML's percent / 100);
    GPU 1 has none: its profiling columns stay empty, never a 0, and one fault says why."""
    probe = GpuProbe(visible=None)
    probe.start()
    rows = [probe.sample() for _ in range(3)]
    n = len(FIELD_NAMES)
    expected = {col: nvml_double.GPM_PERCENT[getattr(nvml_double, metric)] / 100 for col, metric in GPM_METRICS.items()}
    gpu0 = [dict(zip(FIELD_NAMES, row[:n])) for row in rows]
    gpu1 = [dict(zip(FIELD_NAMES, row[n:])) for row in rows]
    assert all(gpu0[0][col] is None for col in GPM_METRICS)  # one sample is no interval yet
    for later in gpu0[1:]:
        assert {col: later[col] for col in GPM_METRICS} == pytest.approx(expected)
    assert all(row[col] is None for row in gpu1 for col in GPM_METRICS)
    gpm_faults = [f for f in probe.faults if f["source"].startswith("gpu1.") and "GPM" in f["message"]]
    assert [f["source"] for f in gpm_faults] == [f"gpu1.{next(iter(GPM_METRICS))}"]  # once, not per column
    assert nvml_double.state["gpm_samples"] == 3  # one GPM sample per round, shared by the five columns
    probe.stop()
    assert nvml_double.state["gpm_freed"] == 3  # two freed after use, the last one at stop
