"""A test double of the `pynvml` module for the GPU paths this machine cannot run.

Two fake GPUs; GPU 1's power call raises NVMLError_NotSupported (as on some boards),
and `fail_after` makes every utilisation call raise after N calls (a GPU fallen off
the bus). Real pynvml exception classes are reused, so code under test catches what it
would catch on a real machine. The real path is tested by test_gpus.py on a GPU machine.
"""

from __future__ import annotations

from types import SimpleNamespace

import pynvml as _real

NVML_TEMPERATURE_GPU = _real.NVML_TEMPERATURE_GPU
NVML_CLOCK_SM = _real.NVML_CLOCK_SM
NVMLError = _real.NVMLError
UUIDS = ["GPU-11111111-aaaa", "GPU-22222222-bbbb"]
state = {"init": 0, "util_calls": 0, "fail_after": None}


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
