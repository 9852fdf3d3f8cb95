"""GPU facts and samples through NVML, named after DCGM's fields.

Only the GPUs the job may use are read: `CUDA_VISIBLE_DEVICES` (indices or UUIDs) is
resolved against NVML by UUID, so `gpu0_*` is the job's first visible GPU whatever its
host index. Nothing here raises into the job: a missing library or a failing call is
recorded as a fault and the column is left empty.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.in_job import gpm
from bench.records import contract as c

# How each catalogue GPU column (bench.records.columns) is read through NVML:
# reader(pynvml, handle, state) -> value, `state` being this GPU's dict kept between samples.
Reader = Callable[[Any, Any, dict[str, Any]], Any]
NVML_READERS: dict[str, Reader] = {
    c.GPU_UTIL: lambda n, h, _s: n.nvmlDeviceGetUtilizationRates(h).gpu,
    c.GPU_MEM_COPY_UTIL: lambda n, h, _s: n.nvmlDeviceGetUtilizationRates(h).memory,
    c.GPU_FB_USED: lambda n, h, _s: n.nvmlDeviceGetMemoryInfo(h).used // (1 << 20),
    c.GPU_FB_TOTAL: lambda n, h, _s: n.nvmlDeviceGetMemoryInfo(h).total // (1 << 20),
    c.GPU_POWER: lambda n, h, _s: round(n.nvmlDeviceGetPowerUsage(h) / 1000.0, 3),
    c.GPU_ENERGY: lambda n, h, _s: n.nvmlDeviceGetTotalEnergyConsumption(h),
    c.GPU_TEMP: lambda n, h, _s: n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU),
    c.GPU_SM_CLOCK: lambda n, h, _s: n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM),
}
# DCGM's profiling fields through NVML GPM (bench.in_job.gpm): empty where the GPU has none.
NVML_READERS.update({name: (lambda n, h, s, name=name: gpm.read_profiling(name, n, h, s)) for name in gpm.GPM_METRICS})


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@dataclass
class GpuProbe:
    """NVML handles of the job's GPUs; `faults` collects what went wrong, once each."""

    visible: str | None = field(default_factory=lambda: os.environ.get("CUDA_VISIBLE_DEVICES"))
    faults: list[dict[str, str]] = field(default_factory=list)
    handles: list[Any] = field(default_factory=list)
    info: list[dict[str, Any]] = field(default_factory=list)
    _nvml: Any = None
    _seen: set[tuple[str, str]] = field(default_factory=set)
    _state: list[dict[str, Any]] = field(default_factory=list)  # per GPU, kept between samples
    _round: int = 0  # samples taken: readers sharing one reading per round (GPM) key on it

    def fault(self, source: str, exc: BaseException | str) -> None:
        message = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
        if (source, message) not in self._seen:
            self._seen.add((source, message))
            self.faults.append({"source": source, "message": message})

    def start(self) -> None:
        """Initialise NVML and pick the visible GPUs; on any failure, record it and go on."""
        if self.visible is not None and self.visible.strip() in ("", "-1", "none", "NoDevFiles"):
            return  # the job was given no GPU
        try:
            import pynvml
        except ImportError as exc:
            self.fault("nvml", f"pynvml not importable ({exc}); install nvidia-ml-py")
            return
        try:
            pynvml.nvmlInit()
        except Exception as exc:  # NVMLError_LibraryNotFound on a machine with no driver
            self.fault("nvml", exc)
            return
        self._nvml = pynvml
        try:
            count = pynvml.nvmlDeviceGetCount()
            all_handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
            uuids = [_text(pynvml.nvmlDeviceGetUUID(h)) for h in all_handles]
        except Exception as exc:
            self.fault("nvml", exc)
            return
        chosen: list[int] = []
        if self.visible is None:
            chosen = list(range(count))
        else:
            for token in (t.strip() for t in self.visible.split(",")):
                if not token:
                    continue
                if token.isdigit():
                    idx = int(token)
                    if idx < count:
                        chosen.append(idx)
                    else:
                        self.fault("nvml", f"CUDA_VISIBLE_DEVICES names GPU {token}, host has {count}")
                    continue
                match = [i for i, u in enumerate(uuids) if u.startswith(token) or u == f"GPU-{token}"]
                if match:
                    chosen.append(match[0])
                else:
                    self.fault("nvml", f"CUDA_VISIBLE_DEVICES entry {token!r} matches no GPU UUID")
        try:
            driver = _text(pynvml.nvmlSystemGetDriverVersion())
        except Exception as exc:
            driver = None
            self.fault("nvml", exc)
        for pos, idx in enumerate(chosen):
            h = all_handles[idx]
            self.handles.append(h)
            entry: dict[str, Any] = {"index": pos, "host_index": idx, "uuid": uuids[idx], "driver": driver}
            for key, call in (
                ("model", lambda h=h: _text(pynvml.nvmlDeviceGetName(h))),
                ("memory_total_mib", lambda h=h: pynvml.nvmlDeviceGetMemoryInfo(h).total // (1 << 20)),
            ):
                try:
                    entry[key] = call()
                except Exception as exc:
                    entry[key] = None
                    self.fault(f"gpu{pos}", exc)
            self.info.append(entry)

    def sample(self) -> list[Any]:
        """One value per `gpu_columns(len(handles))` column; None where a call failed.

        Each GPU keeps a `state` dict between samples, so a reader can turn a counter into
        a rate (the difference since its last sample) or keep an NVML sample buffer."""
        row: list[Any] = []
        while len(self._state) < len(self.handles):
            self._state.append({})
        self._round += 1
        for pos, h in enumerate(self.handles):
            self._state[pos]["round"] = self._round
            for name in c.FIELD_NAMES:
                reader = NVML_READERS.get(name)
                try:
                    if reader is None:
                        raise LookupError(f"no NVML reader for {name} (bench/in_job/gpus.py NVML_READERS)")
                    row.append(reader(self._nvml, h, self._state[pos]))
                except Exception as exc:
                    row.append(None)
                    self.fault(f"gpu{pos}.{name}", exc)
        return row

    def stop(self) -> None:
        if self._nvml is not None:
            for state in self._state:
                gpm.release(self._nvml, state)
            try:
                self._nvml.nvmlShutdown()
            except Exception:
                pass
            self._nvml = None
