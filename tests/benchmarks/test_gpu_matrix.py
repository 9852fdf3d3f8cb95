"""`make bench-gpu`'s verdicts and its answer on machines without a usable GPU (no GPU needed)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_matrix.py"


@pytest.fixture(scope="module")
def gm():
    spec = importlib.util.spec_from_file_location("gpu_matrix_under_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def _row(preset: str, variant: str, **figures: object) -> dict:
    impl = "reference" if variant == "reference" else "atlas"
    return {"impl": impl, "preset": preset, "variant": variant, **figures}


def test_each_target_gets_a_verdict_from_its_figures(gm) -> None:
    rows = [
        _row("cifar", "reference", g_iters_per_s=2.0),
        _row("cifar", "default", g_iters_per_s=11.0, gpu_util_percent_mean=72.0, startup_s=90.0, mfu_pct=4.5,
             achieved_tflops=44.0),
        _row("cifar", "default-warm", g_iters_per_s=11.0, startup_s=41.0),
        _row("imagenet128-deep", "reference", g_iters_per_s=1.0),
        _row("imagenet128-deep", "default", g_iters_per_s=3.0, peak_gpu_memory_gib=70.0, startup_s=100.0),
    ]  # fmt: skip
    got = {t: (v, d) for t, v, d in gm.verdicts(rows, {"device": "NVIDIA H100 80GB HBM3"})}
    assert got["cifar >= 5x reference"] == ("PASS", "5.50x")
    assert got["cifar GPU busy >= 80 %"][0] == "FAIL"
    assert got["cifar cold start <= 120 s"][0] == "PASS" and got["cifar warm start <= 30 s"][0] == "FAIL"
    assert got["cifar MFU"] == ("INFO", "4.5 % (44.0 TFLOP/s)")
    verdict, detail = got["imagenet128-deep >= 4x reference"]
    assert verdict == "FAIL" and "target set for H200, measured on NVIDIA H100" in detail
    assert got["imagenet128-deep fits 80 GB"][0] == "PASS"
    assert got["imagenet128-deep warm start <= 30 s"][0] == "MISSING"
    assert not any(t.startswith("imagenet128 ") for t in got)  # a preset not run has no verdict


def test_without_cuda_one_line_and_exit_0_but_1_on_a_gpu_machine_with_a_cpu_torch(
    gm, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(gm, "gpu_info", lambda: None)
    monkeypatch.setattr(gm, "nvidia_gpu_present", lambda: False)
    assert gm.main([]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "no CUDA GPU" in out[0]
    monkeypatch.setattr(gm, "nvidia_gpu_present", lambda: True)
    assert gm.main([]) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "has an NVIDIA GPU but torch" in out[0] and "CUDA build" in out[0]
