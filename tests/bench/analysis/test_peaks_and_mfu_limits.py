"""Issue 31: peaks by exact board name, and MFU held to its physical limit (<= 100 %).

Real synthetic records on disk, read by `load_run` and the metric catalogue as
`bench report` reads them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.analysis.instrument import instrument_notes
from bench.analysis.metrics import run_metrics
from bench.analysis.peak_flops import PEAKS, find_peak, normalised, peak_tflops, unknown_peak_reason
from bench.cli import main
from bench.records.read import load_run
from tests.synthetic_records import RunSpec, write_run


@pytest.mark.parametrize(
    ("model", "board"),
    [
        ("Tesla V100-SXM2-32GB", "V100 SXM2"),
        ("Tesla V100-SXM2-16GB", "V100 SXM2"),
        ("Tesla V100-PCIE-32GB", "V100 PCIe"),
        ("Tesla V100S-PCIE-32GB", "V100S PCIe"),
        ("NVIDIA A100-SXM4-40GB", "A100 SXM4 40GB"),
        ("NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB"),
        ("NVIDIA A100-PCIE-40GB", "A100 PCIe 40GB"),
        ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"),
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("nvidia  h100_pcie", "H100 PCIe"),
        ("NVIDIA H100 NVL", "H100 NVL"),
        ("NVIDIA H200", "H200 SXM"),
        ("NVIDIA H200 NVL", "H200 NVL"),
    ],
)
def test_each_board_is_found_by_its_exact_name_with_its_variant(model: str, board: str) -> None:
    peak = find_peak(model)
    assert peak is not None and peak.name == board


@pytest.mark.parametrize(
    "model",
    ["NVIDIA RTX A1000", "NVIDIA RTX A1000 6GB Laptop GPU", "A100", "v100", "H100", "NVIDIA H100 PCIe 2",
     "Tesla V100-SXM3-32GB", "NVIDIA GeForce RTX 4090", "NVIDIA A100X", "", "x" * 10_000],
)  # fmt: skip
def test_a_name_that_is_not_exactly_a_listed_board_has_no_peak_and_says_so(model: str) -> None:
    assert find_peak(model) is None and peak_tflops(model, "bfloat16") is None
    reason = unknown_peak_reason(model, "bfloat16")
    assert reason is not None and reason.startswith("MFU unknown")


def test_the_variants_have_their_own_datasheet_figures() -> None:
    assert peak_tflops("Tesla V100S-PCIE-32GB", "float16") == 130.0  # not the V100 PCIe's 112
    assert peak_tflops("Tesla V100-PCIE-16GB", "float16") == 112.0
    assert peak_tflops("NVIDIA H100 PCIe", "bfloat16") == 756.0
    assert peak_tflops("NVIDIA H100 NVL", "bfloat16") == 835.5
    assert peak_tflops("NVIDIA H100 80GB HBM3", "bfloat16") == 989.5
    assert unknown_peak_reason("Tesla V100-SXM2-32GB", "bfloat16") is not None  # no bf16 on V100: said, not guessed
    boards: dict[str, set[str]] = {}
    for p in PEAKS:
        for n in p.names:
            boards.setdefault(normalised(n), set()).add(p.name)
    assert all(len(b) == 1 for b in boards.values())  # one board per name


def _gpu_run(root: Path, run_id: str, model: str, **compile_facts: object) -> Path:
    run = write_run(root, RunSpec("gpu", run_id, gpus=1, duration_s=20, log_every_s=2))
    meta = json.loads((run / "run.json").read_text())
    meta["hardware"]["gpus"][0]["model"] = model
    meta["compile"] = {"precision": "float32", "flops_per_g_iteration": 10**9, "images_per_g_iteration": 8,
                       **compile_facts}  # fmt: skip
    (run / "run.json").write_text(json.dumps(meta))
    return run


def test_mfu_of_a_listed_board_is_computed(tmp_path: Path) -> None:
    m = run_metrics(load_run(_gpu_run(tmp_path, "ok", "Tesla V100-SXM2-32GB")))
    assert m.peak_tflops == 15.7 and m.mfu_pct is not None and 0 < m.mfu_pct < 100
    assert "mfu_pct" not in m.notes


def test_an_rtx_a1000_gets_no_a100_peak_and_no_mfu_and_the_report_says_why(tmp_path: Path) -> None:
    m = run_metrics(load_run(_gpu_run(tmp_path, "a1000", "NVIDIA RTX A1000")))
    assert m.peak_tflops is None and m.mfu_pct is None
    assert "'NVIDIA RTX A1000' is not a board with a datasheet peak" in m.notes["mfu_pct"]
    assert any("NVIDIA RTX A1000" in n for n in instrument_notes([m], [m]))


@pytest.mark.parametrize(
    ("facts", "shown"),
    [
        ({"flops_per_g_iteration": 1e308}, "flops_per_g_iteration"),  # refused by the schema: no inf
        ({"flops_per_g_iteration": 10**17}, "physical limit of 100 %"),  # finite but MFU far above 100 %
        ({"images_per_g_iteration": 0}, "images_per_g_iteration"),
    ],
)
def test_an_impossible_compile_section_gives_no_mfu_and_is_named(
    tmp_path: Path, facts: dict, shown: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _gpu_run(tmp_path, "bad", "Tesla V100-SXM2-32GB", **facts)
    data = load_run(run)
    m = run_metrics(data)
    assert m.mfu_pct is None and m.achieved_tflops is None
    said = " ".join([*data.problems, *m.notes.values()])
    assert shown in said


def test_images_per_g_iteration_one_gives_no_mfu_above_100_percent(tmp_path: Path) -> None:
    """The issue's case: 628 % shown; MFU > 100 % is impossible, so unknown and named."""
    run = _gpu_run(tmp_path, "one", "Tesla V100-SXM2-32GB", flops_per_g_iteration=10**12, images_per_g_iteration=1)
    m = run_metrics(load_run(run))
    assert m.mfu_pct is None
    assert "above the physical limit of 100 %" in m.notes["mfu_pct"]
    assert any("physical limit" in n for n in instrument_notes([m], [m]))


def test_bench_check_names_a_compile_value_outside_its_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _gpu_run(tmp_path, "huge", "Tesla V100-SXM2-32GB", flops_per_g_iteration=1e308)
    assert main(["check", str(tmp_path)]) == 1
    out = capsys.readouterr()
    assert "compile.flops_per_g_iteration" in out.out + out.err
