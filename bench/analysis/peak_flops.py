"""Peak dense TFLOP/s per GPU board and precision: the denominator of MFU.

Figures are NVIDIA's datasheet numbers *without* structured sparsity (the datasheets of
A100, H100 and H200 print the sparse figure, twice the dense one, with an asterisk; the
dense figure is half of it). `bfloat16` runs are measured against the BF16 tensor-core
peak; `float32` runs against TF32 tensor cores where the GPU has them, since cuDNN runs
fp32 convolutions in TF32 by default (torch.backends.cudnn.allow_tf32), and against
plain FP32 on V100, which has no TF32.

A board is found by its exact device name, normalised (case, `-`/`_`/spaces, a leading
"NVIDIA" or "Tesla"), never by a substring: "NVIDIA RTX A1000" is not an A100 and
"Tesla V100S-PCIE-32GB" is not a V100 PCIe (its clocks, and so its peak, are higher). A
GPU (or precision) not listed has no MFU ("—", and `unknown_peak_reason` says why), never
a guessed one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

V100_DATASHEET = (
    "https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf"
)
V100S_DATASHEET = V100_DATASHEET  # the r5 update of the V100 datasheet adds the V100S PCIe column
A100_DATASHEET = "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"
H100_DATASHEET = "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"
H200_DATASHEET = "https://www.nvidia.com/en-us/data-center/h200/"


@dataclass(frozen=True)
class Peak:
    name: str  # the board, as the datasheet names it
    names: tuple[str, ...]  # NVML device names of this board (and the datasheet's), matched exactly once normalised
    tflops: dict[str, float]  # precision (torch dtype name) -> dense TFLOP/s
    source: str


_A100 = {"float32": 156.0, "bfloat16": 312.0, "float16": 312.0}  # the same peak for 40 and 80 GB, SXM4 and PCIe
_H100_SXM = {"float32": 494.5, "bfloat16": 989.5, "float16": 989.5}
_NVL = {"float32": 417.5, "bfloat16": 835.5, "float16": 835.5}
PEAKS: tuple[Peak, ...] = (
    Peak("V100 SXM2", ("Tesla V100-SXM2-16GB", "Tesla V100-SXM2-32GB", "V100 SXM2"),
         {"float32": 15.7, "float16": 125.0}, V100_DATASHEET),
    Peak("V100 PCIe", ("Tesla V100-PCIE-16GB", "Tesla V100-PCIE-32GB", "V100 PCIe"),
         {"float32": 14.0, "float16": 112.0}, V100_DATASHEET),
    Peak("V100S PCIe", ("Tesla V100S-PCIE-32GB", "V100S PCIe"), {"float32": 16.4, "float16": 130.0}, V100S_DATASHEET),
    Peak("A100 SXM4 40GB", ("NVIDIA A100-SXM4-40GB", "A100 SXM4 40GB"), _A100, A100_DATASHEET),
    Peak("A100 SXM4 80GB", ("NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB"), _A100, A100_DATASHEET),
    Peak("A100 PCIe 40GB", ("NVIDIA A100-PCIE-40GB", "A100 PCIe 40GB"), _A100, A100_DATASHEET),
    Peak("A100 PCIe 80GB", ("NVIDIA A100 80GB PCIe", "NVIDIA A100-PCIE-80GB", "A100 PCIe 80GB"), _A100, A100_DATASHEET),
    Peak("H100 SXM", ("NVIDIA H100 80GB HBM3", "H100 SXM", "H100 SXM5 80GB"), _H100_SXM, H100_DATASHEET),
    Peak("H100 PCIe", ("NVIDIA H100 PCIe", "H100 PCIe"),
         {"float32": 378.0, "bfloat16": 756.0, "float16": 756.0}, H100_DATASHEET),
    Peak("H100 NVL", ("NVIDIA H100 NVL", "H100 NVL"), _NVL, H100_DATASHEET),
    Peak("H200 SXM", ("NVIDIA H200", "H200 SXM", "NVIDIA H200 141GB HBM3e"), _H100_SXM, H200_DATASHEET),
    Peak("H200 NVL", ("NVIDIA H200 NVL", "H200 NVL"), _NVL, H200_DATASHEET),
)  # fmt: skip

_VENDOR = ("nvidia", "tesla")


def normalised(gpu_model: str) -> str:
    """The comparable form of a device name: lower case, words split on `-`, `_` and spaces,
    the vendor/brand words ("NVIDIA", "Tesla") dropped: "Tesla V100-SXM2-32GB" -> "v100 sxm2 32gb"."""
    words = [w for w in re.split(r"[\s_\-]+", gpu_model.strip().lower()) if w]
    while words and words[0] in _VENDOR:
        words = words[1:]
    return " ".join(words)


_BY_NAME: dict[str, Peak] = {normalised(n): p for p in PEAKS for n in p.names}


def find_peak(gpu_model: str | None) -> Peak | None:
    """The datasheet entry for an NVML device name ("NVIDIA H100 80GB HBM3"), or None when not listed exactly."""
    if not isinstance(gpu_model, str) or not gpu_model or len(gpu_model) > 200:
        return None
    return _BY_NAME.get(normalised(gpu_model))


def peak_tflops(gpu_model: str | None, precision: str | None) -> float | None:
    """Dense peak TFLOP/s of one GPU at a precision ("bfloat16", "float32"), or None when unknown."""
    peak = find_peak(gpu_model)
    return peak.tflops.get(precision or "") if peak is not None else None


def unknown_peak_reason(gpu_model: str | None, precision: str | None) -> str | None:
    """Why a run has no MFU for want of a peak (None when its board and precision are listed)."""
    shown = repr(gpu_model[:80]) if isinstance(gpu_model, str) else None
    if not shown:
        return "MFU unknown: run.json names no GPU model (no datasheet peak to divide by)"
    peak = find_peak(gpu_model)
    if peak is None:
        return (
            f"MFU unknown: GPU model {shown} is not a board with a datasheet peak in bench/analysis/peak_flops.py "
            "(matched by exact name, variant included); add its datasheet figure there"
        )
    if precision not in peak.tflops:
        return f"MFU unknown: the {peak.name} datasheet gives no dense peak at precision {precision!r}"
    return None
