"""The profile window's CUDA side without a GPU: `summarise` fed profiler events shaped as
kineto gives them on a GPU (an operator, the `cudaLaunchKernel` call inside it, the kernel
on the device with the same correlation id; a backward node on the autograd thread whose
sequence number names the forward operator that made it).

No CUDA device is needed to check the bookkeeping: which module and which operator each
kernel's time is charged to. `make gpu-proof` checks the same on a real GPU (its target
"layer profile: GPU time per module").
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.autograd import DeviceType

from workflows.biggan.profile_window import summarise


@dataclass
class Event:
    """The accessors `summarise` reads from a kineto event (torch.autograd.profiler_util)."""

    label: str
    start: int
    dur: int
    kind: DeviceType = DeviceType.CPU
    corr: int = 0
    seq: int = -1
    fwd_thread: int = 0
    thread: int = 1

    def name(self) -> str:
        return self.label

    def device_type(self) -> DeviceType:
        return self.kind

    def is_async(self) -> bool:
        return False

    def correlation_id(self) -> int:
        return self.corr

    def duration_ns(self) -> int:
        return self.dur

    def start_ns(self) -> int:
        return self.start

    def end_ns(self) -> int:
        return self.start + self.dur

    def sequence_nr(self) -> int:
        return self.seq

    def fwd_thread_id(self) -> int:
        return self.fwd_thread

    def start_thread_id(self) -> int:
        return self.thread


def _kernel(corr: int, ns: int) -> Event:
    return Event("void implicit_gemm_kernel<...>", 10_000 + corr, ns, DeviceType.CUDA, corr)


EVENTS = [
    Event("G forward", 0, 1_000),
    Event("aten::conv2d", 100, 400, seq=10),
    Event("cudaLaunchKernel", 200, 100, corr=1),
    Event("D forward", 1_000, 1_000),
    Event("aten::mm", 1_100, 300, seq=11),
    Event("cudaLaunchKernel", 1_150, 50, corr=2),
    # the autograd thread: G's convolution's gradient, made by the forward op of sequence 10
    Event("autograd::engine::evaluate_function: ConvolutionBackward0", 3_000, 800, seq=10, fwd_thread=1, thread=2),
    Event("aten::convolution_backward", 3_100, 500, thread=2),
    Event("cudaLaunchKernel", 3_200, 50, corr=3, thread=2),
    _kernel(1, 4_000),
    _kernel(2, 6_000),
    _kernel(3, 8_000),
    _kernel(3, 1_000),  # a second kernel of the same launch site: both count
]


def test_each_kernel_is_charged_to_its_operator_and_every_module_around_it() -> None:
    doc = summarise(EVENTS, ["G forward", "D forward"], [], torch.device("cuda", 0), 2, 6, 0.25)
    assert doc["activities"] == ["cpu", "cuda"] and doc["top_by"] == "self_device_us"
    assert doc["iterations"] == {"first": 2, "last": 6, "count": 5} and doc["device"] == "cuda:0"
    g, d = doc["modules"]["G"], doc["modules"]["D"]
    assert g["forward"] == {"calls": 1, "cpu_us": 1.0, "device_us": 4.0}
    assert g["backward"] == {"calls": 1, "cpu_us": 0.8, "device_us": 9.0}  # through the sequence number
    assert d == {"forward": {"calls": 1, "cpu_us": 1.0, "device_us": 6.0}}  # D made no gradient here
    top = [(r["name"], r["self_device_us"]) for r in doc["top_operators"]]
    assert top[:3] == [("aten::convolution_backward", 9.0), ("aten::mm", 6.0), ("aten::conv2d", 4.0)]
    assert top[3:] == [(EVENTS[6].label, 0.0)]  # the autograd node: its kernels are its operator's
    # the launch calls are runtime calls, not operators; the host's self time excludes them
    assert all(not r["name"].startswith("cuda") for r in doc["top_operators"])
    assert next(r for r in doc["top_operators"] if r["name"] == "aten::conv2d")["self_cpu_us"] == 0.3  # 400 - 100 ns


def test_on_the_cpu_no_device_time_is_reported() -> None:
    doc = summarise(EVENTS[:9], ["G forward", "D forward"], [], torch.device("cpu"), 2, 6, 0.25)
    assert doc["activities"] == ["cpu"] and doc["top_by"] == "self_cpu_us"
    assert "device_us" not in doc["modules"]["G"]["forward"]
    assert all("self_device_us" not in r for r in doc["top_operators"])
