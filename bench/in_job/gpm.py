"""DCGM's profiling fields (1001-1005) read on the job's node through NVML GPM.

GPU utilisation (`DCGM_FI_DEV_GPU_UTIL`) only says a kernel was running; SM activity,
occupancy, tensor and DRAM activity say how much of the GPU it used. DCGM computes them
from GPU performance monitoring counters; NVML exposes the same counters as GPM metrics
(Hopper and newer, driver 520+): two samples taken a sampling interval apart give each
metric's average over the interval, in percent
(https://docs.nvidia.com/deploy/nvml-api/group__nvmlGpmFunctions.html, nvml.h
`nvmlGpmMetricId_t`; Python binding nvidia-ml-py's `nvmlGpmMetricsGet`). They are
written as DCGM writes them: ratios 0-1.

Where a GPU or driver has no GPM, the columns stay empty and one fault per GPU says why.
"""

from __future__ import annotations

from typing import Any

from bench.records import contract as c

# Record column -> the NVML GPM metric (nvml.h nvmlGpmMetricId_t) with DCGM's meaning.
GPM_METRICS: dict[str, str] = {
    c.GPU_GR_ACTIVE: "NVML_GPM_METRIC_GRAPHICS_UTIL",
    c.GPU_SM_ACTIVE: "NVML_GPM_METRIC_SM_UTIL",
    c.GPU_SM_OCCUPANCY: "NVML_GPM_METRIC_SM_OCCUPANCY",
    c.GPU_TENSOR_ACTIVE: "NVML_GPM_METRIC_ANY_TENSOR_UTIL",
    c.GPU_DRAM_ACTIVE: "NVML_GPM_METRIC_DRAM_BW_UTIL",
}
NO_GPM = (
    "this GPU or driver has no GPM counters (NVML GPM needs a Hopper or newer GPU, driver 520+): "
    "profiling columns stay empty"
)


class GpmUnavailable(LookupError):
    """GPM cannot be read on this GPU: raised once, the profiling columns then stay empty."""


def _supported(nvml: Any, handle: Any, state: dict[str, Any]) -> bool:
    """Whether this GPU has GPM; the first time it has not, GpmUnavailable (one fault per
    GPU, not one per column and sample)."""
    if "gpm_error" not in state:
        state["gpm_error"] = None
        if not hasattr(nvml, "nvmlGpmQueryDeviceSupport"):
            state["gpm_error"] = "pynvml has no GPM API: install nvidia-ml-py 11.520 or newer"
        elif not nvml.nvmlGpmQueryDeviceSupport(handle).isSupportedDevice:
            state["gpm_error"] = NO_GPM
        if state["gpm_error"]:
            raise GpmUnavailable(state["gpm_error"])
    return state["gpm_error"] is None


def _ratios(nvml: Any, handle: Any, state: dict[str, Any]) -> dict[str, float]:
    """Take this round's GPM sample; the metrics over the interval since the last one."""
    sample = nvml.nvmlGpmSampleAlloc()
    try:
        nvml.nvmlGpmSampleGet(handle, sample)
    except Exception:
        nvml.nvmlGpmSampleFree(sample)
        raise
    previous, state["gpm_sample"] = state.get("gpm_sample"), sample
    if previous is None:
        return {}  # the first round has no interval yet
    try:
        get = nvml.c_nvmlGpmMetricsGet_t()
        get.version = nvml.NVML_GPM_METRICS_GET_VERSION
        get.numMetrics = len(GPM_METRICS)
        get.sample1, get.sample2 = previous, sample
        for i, metric in enumerate(GPM_METRICS.values()):
            get.metrics[i].metricId = getattr(nvml, metric)
        nvml.nvmlGpmMetricsGet(get)
        out: dict[str, float] = {}
        for i, column in enumerate(GPM_METRICS):
            if not getattr(get.metrics[i], "nvmlReturn", 0):  # NVML_SUCCESS
                out[column] = round(get.metrics[i].value / 100.0, 4)
        return out
    finally:
        nvml.nvmlGpmSampleFree(previous)


def read_profiling(column: str, nvml: Any, handle: Any, state: dict[str, Any]) -> float | None:
    """One profiling column of this sampling round (`state["round"]`, set by the probe);
    the GPM sample is taken once per round and shared by the five columns."""
    if not _supported(nvml, handle, state):
        return None
    if state.get("gpm_round") != state.get("round"):
        state["gpm_round"] = state.get("round")
        state["gpm_values"] = {}
        state["gpm_values"] = _ratios(nvml, handle, state)
    return state["gpm_values"].get(column)


def release(nvml: Any, state: dict[str, Any]) -> None:
    """Free the GPM sample kept between rounds (before nvmlShutdown)."""
    sample = state.pop("gpm_sample", None)
    if sample is not None:
        try:
            nvml.nvmlGpmSampleFree(sample)
        except Exception:
            pass
