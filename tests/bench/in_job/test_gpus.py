"""GPU probing: no-GPU paths here, the real NVML path where there is a GPU."""

from __future__ import annotations

import time

import pytest

from bench.in_job.gpm import GPM_METRICS
from bench.in_job.gpus import GpuProbe
from bench.records.contract import FIELD_NAMES, gpu_columns


def nvml_ok() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml.nvmlDeviceGetCount() > 0
    except Exception:
        return False


def test_columns_follow_dcgm_names() -> None:
    assert gpu_columns(2)[0] == "gpu0_DCGM_FI_DEV_GPU_UTIL"
    assert len(gpu_columns(2)) == 2 * len(FIELD_NAMES)
    assert gpu_columns(0) == []


def test_job_given_no_gpu_probes_nothing() -> None:
    probe = GpuProbe(visible="")
    probe.start()
    assert probe.handles == [] and probe.faults == [] and probe.sample() == []


@pytest.mark.skipif(nvml_ok(), reason="NVML works here: the no-library path is tested on machines without it")
def test_missing_nvml_is_a_fault_not_an_error() -> None:
    probe = GpuProbe(visible=None)
    probe.start()
    assert probe.handles == []
    assert probe.faults and "NVMLError_LibraryNotFound" in probe.faults[0]["message"]
    assert probe.sample() == []
    probe.stop()


@pytest.mark.gpu
@pytest.mark.skipif(not nvml_ok(), reason="needs an NVIDIA GPU with NVML (none on this machine)")
def test_real_gpu_sample() -> None:
    probe = GpuProbe(visible="0")
    probe.start()
    assert len(probe.handles) == 1 and probe.info[0]["uuid"].startswith("GPU-")
    row = probe.sample()
    assert len(row) == len(FIELD_NAMES)
    util, _, used, total = row[:4]
    assert 0 <= util <= 100 and 0 < used <= total
    by_uuid = GpuProbe(visible=probe.info[0]["uuid"])
    by_uuid.start()
    assert by_uuid.info[0]["host_index"] == 0
    probe.stop()


@pytest.mark.gpu
@pytest.mark.skipif(not nvml_ok(), reason="needs an NVIDIA GPU with NVML (none on this machine)")
def test_real_gpu_profiling_columns() -> None:
    """GPM on a Hopper or newer GPU: ratios 0-1 from the second sample; before Hopper: empty, one fault."""
    probe = GpuProbe(visible="0")
    probe.start()
    first = probe.sample()
    time.sleep(0.5)  # an interval for GPM to average over
    second = probe.sample()
    probe.stop()
    columns = [FIELD_NAMES.index(name) for name in GPM_METRICS]
    assert all(first[i] is None for i in columns)
    gpm_faults = [f for f in probe.faults if "GPM" in f["message"]]
    if gpm_faults:
        assert len(gpm_faults) == 1 and all(second[i] is None for i in columns)
    else:
        assert all(0.0 <= second[i] <= 1.0 for i in columns), second
