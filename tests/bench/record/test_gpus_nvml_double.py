"""GPU selection and fault handling, driven through a pynvml double (no GPU here)."""

from __future__ import annotations

import sys

import pytest

from bench.record.gpus import GpuProbe
from bench.records.contract import FIELD_NAMES
from tests.bench.record import nvml_double


@pytest.fixture(autouse=True)
def fake_nvml(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "pynvml", nvml_double)
    nvml_double.state.update(init=0, util_calls=0, fail_after=None)
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
    assert rows[0][:n] == [90, 40, 1024, 32768, 250.5, 1_000_000, 60, 1530]
    assert rows[0][n + 4] is None  # GPU 1 power: not supported
    assert [f["source"] for f in probe.faults] == ["gpu1.DCGM_FI_DEV_POWER_USAGE"]


def test_lost_gpu_mid_run_keeps_sampling() -> None:
    nvml_double.state["fail_after"] = 2
    probe = GpuProbe(visible="0")
    probe.start()
    first, second = probe.sample(), probe.sample()
    assert first[0] == 90 and second[0] is None and second[2] == 1024  # memory still read
    assert any("GPU is lost" in f["message"] for f in probe.faults)
