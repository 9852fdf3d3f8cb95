"""A test double of the `pynvml` module for the GPU paths this machine cannot run.

Two fake GPUs; GPU 1's power call raises NVMLError_NotSupported (as on some boards),
and `fail_after` makes every utilisation call raise after N calls (a GPU fallen off
the bus). GPU 0 has GPM counters (a Hopper GPU), GPU 1 has none (an older one): GPM
metrics go through the real nvidia-ml-py structures (c_nvmlGpmMetricsGet_t) and need
two samples, as NVML does. Real pynvml exception classes are reused, so code under test
catches what it would catch on a real machine. The real path is tested by test_gpus.py on a GPU machine.
"""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

import pynvml as _real

NVML_TEMPERATURE_GPU = _real.NVML_TEMPERATURE_GPU
NVML_CLOCK_SM = _real.NVML_CLOCK_SM
NVMLError = _real.NVMLError
UUIDS = ["GPU-11111111-aaaa", "GPU-22222222-bbbb"]
state = {"init": 0, "util_calls": 0, "fail_after": None, "gpm_samples": 0, "gpm_freed": 0}
# GPU 0's GPM metrics in percent (nvml.h nvmlGpmMetricId_t), as NVML returns them.
GPM_PERCENT = {
    _real.NVML_GPM_METRIC_GRAPHICS_UTIL: 95.0,
    _real.NVML_GPM_METRIC_SM_UTIL: 38.0,
    _real.NVML_GPM_METRIC_SM_OCCUPANCY: 21.5,
    _real.NVML_GPM_METRIC_ANY_TENSOR_UTIL: 12.25,
    _real.NVML_GPM_METRIC_DRAM_BW_UTIL: 44.0,
}
c_nvmlGpmMetricsGet_t = _real.c_nvmlGpmMetricsGet_t
NVML_GPM_METRICS_GET_VERSION = _real.NVML_GPM_METRICS_GET_VERSION
for _name in dir(_real):
    if _name.startswith("NVML_GPM_METRIC_"):
        globals()[_name] = getattr(_real, _name)


def nvmlInit() -> None:
    state["init"] += 1


def nvmlShutdown() -> None:
    pass


def nvmlDeviceGetCount() -> int:
    return 2


def nvmlDeviceGetHandleByIndex(i: int) -> int:
    return i


def nvmlDeviceGetUUID(h: int) -> str:
    return UUIDS[h]


def nvmlSystemGetDriverVersion() -> bytes:
    return b"550.54"


def nvmlDeviceGetName(h: int) -> str:
    return "Tesla V100-SXM2-32GB"


def nvmlDeviceGetMemoryInfo(h: int) -> SimpleNamespace:
    return SimpleNamespace(total=32 * 1024**3, used=(h + 1) * 1024**3)


def nvmlDeviceGetUtilizationRates(h: int) -> SimpleNamespace:
    state["util_calls"] += 1
    if state["fail_after"] is not None and state["util_calls"] > state["fail_after"]:
        raise _real.NVMLError(_real.NVML_ERROR_GPU_IS_LOST)
    return SimpleNamespace(gpu=90 + h, memory=40)


def nvmlDeviceGetPowerUsage(h: int) -> int:
    if h == 1:
        raise _real.NVMLError(_real.NVML_ERROR_NOT_SUPPORTED)
    return 250_500


def nvmlDeviceGetTotalEnergyConsumption(h: int) -> int:
    return 1_000_000


def nvmlDeviceGetTemperature(h: int, sensor: int) -> int:
    return 60


def nvmlDeviceGetClockInfo(h: int, clock: int) -> int:
    return 1530


def nvmlGpmQueryDeviceSupport(h: int) -> SimpleNamespace:
    return SimpleNamespace(isSupportedDevice=int(h == 0))


def nvmlGpmSampleAlloc() -> _real.c_nvmlGpmSample_t:
    """A non-null sample buffer, as NVML's allocator returns (the real one: a pointer to an opaque struct)."""
    return ctypes.pointer(_real.c_nvmlGpmSample_t._type_())


def nvmlGpmSampleGet(h: int, sample: _real.c_nvmlGpmSample_t) -> _real.c_nvmlGpmSample_t:
    if h != 0:
        raise _real.NVMLError(_real.NVML_ERROR_NOT_SUPPORTED)
    state["gpm_samples"] += 1
    return sample


def nvmlGpmSampleFree(sample: _real.c_nvmlGpmSample_t) -> None:
    state["gpm_freed"] += 1


def nvmlGpmMetricsGet(get: _real.c_nvmlGpmMetricsGet_t) -> _real.c_nvmlGpmMetricsGet_t:
    if get.version != _real.NVML_GPM_METRICS_GET_VERSION or not get.sample1 or not get.sample2:
        raise _real.NVMLError(_real.NVML_ERROR_INVALID_ARGUMENT)
    for i in range(get.numMetrics):
        metric = get.metrics[i]
        if metric.metricId in GPM_PERCENT:
            metric.value, metric.nvmlReturn = GPM_PERCENT[metric.metricId], _real.NVML_SUCCESS
        else:
            metric.nvmlReturn = _real.NVML_ERROR_NOT_SUPPORTED
    return get
