"""Peak dense TFLOP/s per GPU model and precision: the denominator of MFU.

Figures are NVIDIA's datasheet numbers *without* structured sparsity (the datasheets of
A100, H100 and H200 print the sparse figure, twice the dense one, with an asterisk; the
dense figure is half of it). `bfloat16` runs are measured against the BF16 tensor-core
peak; `float32` runs against TF32 tensor cores where the GPU has them, since cuDNN runs
fp32 convolutions in TF32 by default (torch.backends.cudnn.allow_tf32), and against
plain FP32 on V100, which has no TF32. A GPU (or precision) not listed has no MFU ("—"),
never a guessed one.
"""

from __future__ import annotations

from dataclasses import dataclass

V100_DATASHEET = (
    "https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf"
)
A100_DATASHEET = "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"
H100_DATASHEET = "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"
H200_DATASHEET = "https://www.nvidia.com/en-us/data-center/h200/"


@dataclass(frozen=True)
class Peak:
    name: str  # the board, as the datasheet names it
    match: tuple[str, ...]  # every one of these occurs in NVML's device name (case-insensitive)
    tflops: dict[str, float]  # precision (torch dtype name) -> dense TFLOP/s
    source: str


# Most specific first: "H100 PCIe" before "H100".
PEAKS: tuple[Peak, ...] = (
    Peak("V100 PCIe", ("v100", "pcie"), {"float32": 14.0, "float16": 112.0}, V100_DATASHEET),
    Peak("V100 SXM2", ("v100",), {"float32": 15.7, "float16": 125.0}, V100_DATASHEET),
    Peak("A100 (SXM4 and PCIe)", ("a100",), {"float32": 156.0, "bfloat16": 312.0, "float16": 312.0}, A100_DATASHEET),
    Peak("H100 PCIe", ("h100", "pcie"), {"float32": 378.0, "bfloat16": 756.0, "float16": 756.0}, H100_DATASHEET),
    Peak("H100 NVL", ("h100", "nvl"), {"float32": 417.5, "bfloat16": 835.5, "float16": 835.5}, H100_DATASHEET),
    Peak("H100 SXM", ("h100",), {"float32": 494.5, "bfloat16": 989.5, "float16": 989.5}, H100_DATASHEET),
    Peak("H200 NVL", ("h200", "nvl"), {"float32": 417.5, "bfloat16": 835.5, "float16": 835.5}, H200_DATASHEET),
    Peak("H200 SXM", ("h200",), {"float32": 494.5, "bfloat16": 989.5, "float16": 989.5}, H200_DATASHEET),
)


def find_peak(gpu_model: str | None) -> Peak | None:
    """The datasheet entry for an NVML device name ("NVIDIA H100 80GB HBM3"), or None."""
    if not gpu_model:
        return None
    name = gpu_model.lower()
    return next((p for p in PEAKS if all(m in name for m in p.match)), None)


def peak_tflops(gpu_model: str | None, precision: str | None) -> float | None:
    """Dense peak TFLOP/s of one GPU at a precision ("bfloat16", "float32"), or None when unknown."""
    peak = find_peak(gpu_model)
    return peak.tflops.get(precision or "") if peak is not None else None
