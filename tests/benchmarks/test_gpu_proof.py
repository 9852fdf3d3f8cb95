"""`make gpu-proof`'s rehearsal end to end on the CPU, and its verdicts from given figures (no GPU needed).

The rehearsal is the real script in its own process: every cell on the `smoke` preset, the
tests' NVML double as GPU 0 in every child process, and the reference cells on the stand-in
tree that benchmarks/reference_stand_in.py writes (REF_DIR unset here, as in CI). What it
must leave: a complete evidence folder whose targets table parses and says "rehearsal".
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "benchmarks"
CELLS = [
    "cifar/reference",
    "cifar/default",
    "cifar/accumulate2",
    "cifar/run-cold",
    "cifar/run-warm",
    "cifar/host-overhead",
    "imagenet128/reference",
    "imagenet128/default",
    "imagenet128-deep/reference",
    "imagenet128-deep/default",
]


@pytest.fixture(scope="module")
def ev():
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("gpu_proof_evidence", BENCH / "gpu_proof_evidence.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    sys.path.remove(str(BENCH))


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path_factory.mktemp("proof") / "evidence"
    env = {k: v for k, v in os.environ.items() if k not in ("REF_DIR", "CUDA_VISIBLE_DEVICES")}
    readme_before = (REPO / "README.md").read_text(encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(BENCH / "gpu_proof.py"), "--rehearse", "--budget", "1000", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=1100,
        env=env,
        cwd=REPO,
    )
    assert (REPO / "README.md").read_text(encoding="utf-8") == readme_before  # a rehearsal never publishes
    return proc, out


@pytest.mark.slow
@pytest.mark.timeout(1200)  # eleven processes that import torch: minutes on 2 busy cores
def test_the_rehearsal_runs_every_cell_and_leaves_a_complete_evidence_folder(rehearsal, ev) -> None:
    proc, out = rehearsal
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "cells.jsonl").read_text().splitlines()]
    assert [r["cell"] for r in rows] == CELLS
    assert all(r["status"] == "ok" and r["rehearsal"] is True for r in rows), rows
    ref = {r["cell"]: r for r in rows if r["impl"] == "reference"}
    assert all(r["stand_in"] is True and r["g_iters_per_s"] > 0 for r in ref.values())  # the stand-in, named
    atlas = [r for r in rows if r["cell"].endswith(("/default", "/accumulate2"))]
    assert all(r["experiment"] == "smoke" and r["losses_finite"] for r in atlas)
    assert next(r for r in rows if r["cell"] == "cifar/accumulate2")["accumulate"] == 2
    for variant in ("run-cold", "run-warm"):
        folder = out / variant
        assert (folder / "run.json").is_file() and (folder / "train.jsonl").is_file()
        assert list(folder.glob("samples-*.csv")), f"no samples in {folder}"
        meta = json.loads((folder / "run.json").read_text())
        assert meta["experiment"] == "smoke" and meta["exit"]["code"] == 0
    cold = next(r for r in rows if r["cell"] == "cifar/run-cold")
    # the double's GPU 0: busy 90 %, GPM SM 0.38 / tensor 0.1225, 250.5 W and a counter advancing at 250.5 W
    assert cold["gpu_util_mean_pct"] == pytest.approx(90.0)
    assert cold["sm_active"] == pytest.approx(0.38, abs=1e-3)  # samples keep 3 decimals
    assert cold["tensor_active"] == pytest.approx(0.1225, abs=1e-3)
    assert cold["counter_j_per_image"] > 0 and cold["power_j_per_image"] > 0
    assert cold["images_seen"] > 0 and cold["mfu_pct"] is not None
    overhead = next(r for r in rows if r["cell"] == "cifar/host-overhead")
    assert overhead["aten_ops_per_iter"] > 0

    text = (out / "README.md").read_text()
    assert "REHEARSAL" in text and "NOT GPU results" in text and "gpu_proof.py --rehearse" in text
    targets = ev.parse_targets(text)
    names = [t["target"] for t in targets]
    for expected in (
        "cifar >= 5x reference",
        "imagenet128 >= 3.5x reference",
        "imagenet128-deep >= 4x reference",
        "cifar GPU busy >= 80 % (recorded run, steady)",
        "compile guard passed",
        "graph breaks 0",
        "start-up cold <= 120 s",
        "start-up warm <= 30 s",
        "MFU (recorded run)",
    ):
        assert expected in names, names
    assert any(n.startswith("cifar accumulate 2") for n in names) and any(n.startswith("J/image") for n in names)
    assert all(t["verdict"].endswith("(rehearsal)") for t in targets), targets
    layers = next(t for t in targets if t["target"] == "layer profile: GPU time per module (recorded run)")
    assert layers["verdict"] == "INFO (rehearsal)" and layers["measured"].startswith("CPU only"), layers
    assert cold["profile"] == "recorded" and cold["profile_modules"] > 0 and cold["profile_top_operator"]
    assert all("STAND-IN reference" in t["measured"] for t in targets if t["target"].endswith("x reference"))
    energy = next(t for t in targets if t["target"].startswith("J/image"))
    assert energy["verdict"] == "PASS (rehearsal)", energy  # the double's counter and power agree by construction


def test_a_rehearsal_refuses_to_write_under_benchmarks_results() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH / "gpu_proof.py"), "--rehearse", "--out", str(BENCH / "results" / "x")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert proc.returncode != 0 and "a rehearsal is not a GPU result" in proc.stdout + proc.stderr
    assert not (BENCH / "results" / "x").exists()


def _figures(**extra: object) -> list[dict]:
    base = [
        {"cell": "cifar/reference", "impl": "reference", "preset": "cifar", "g_iters_per_s": 6.0},
        {
            "cell": "cifar/default",
            "impl": "atlas",
            "preset": "cifar",
            "g_iters_per_s": 24.0,
            "images_per_s": 6000.0,
            "gpu_util_percent_mean": 41.0,
        },
        {
            "cell": "imagenet128/reference",
            "impl": "reference",
            "preset": "imagenet128",
            "status": "reference absent",
            "error": "REF_DIR is not set",
        },
        {"cell": "imagenet128/default", "impl": "atlas", "preset": "imagenet128", "g_iters_per_s": 3.0},
        {"cell": "cifar/accumulate2", "impl": "atlas", "preset": "cifar", "images_per_s": 5800.0},
        {
            "cell": "cifar/run-cold",
            "impl": "atlas",
            "preset": "cifar",
            "images_per_s": 5900.0,
            "gpu_util_steady_pct": 92.0,
            "compile_guard": "passed",
            "graph_breaks": 0,
            "startup_s": 70.0,
            "compile_cache": "cold",
            "counter_j_per_image": 0.050,
            "power_j_per_image": 0.056,
            "median_power_j_per_image": 0.0505,
            "mfu_pct": 3.1,
            "achieved_tflops": 30.0,
            "profile": "recorded",
            "profile_device": "cuda:0",
            "profile_activities": ["cpu", "cuda"],
            "profile_iterations": 5,
            "profile_window_s": 0.41,
            "profile_modules": 14,
            "profile_g_device_ms": 61.2,
            "profile_d_device_ms": 88.4,
            "profile_top_operator": "aten::convolution_backward",
        },
        {"cell": "cifar/run-warm", "impl": "atlas", "preset": "cifar", "startup_s": 12.0, "compile_cache": "partial"},
        {
            "cell": "cifar/host-overhead",
            "impl": "atlas",
            "preset": "cifar",
            "aten_ops_per_iter": 950.0,
            "host_outside_ops_ms_per_iter": 31.5,
        },
        {
            "cell": "imagenet128-deep/default",
            "impl": "atlas",
            "preset": "imagenet128-deep",
            "status": "skipped",
            "error": "skipped: 30 s left",
        },
    ]
    return base


def test_verdicts_judge_each_target_and_say_what_to_do_next(ev) -> None:
    got = {t: (v, m, n) for t, v, m, n in ev.verdicts(_figures(), "NVIDIA H100 80GB HBM3")}
    verdict, measured, nxt = got["cifar >= 5x reference"]
    assert (verdict, measured.split(" ")[0]) == ("FAIL", "4.00x")
    assert nxt.startswith("host-bound: GPU busy 41 %") and "950.0 ATen ops" in nxt and "31.5 ms" in nxt
    assert got["imagenet128 >= 3.5x reference"][:2] == ("MISSING", "imagenet128/reference: REF_DIR is not set")
    assert got["imagenet128-deep >= 4x reference"][0] == "SKIPPED"
    assert got["cifar accumulate 2: runs, images/s within 5 % of accumulate 1"][0] == "PASS"  # -3.3 %
    assert got["cifar GPU busy >= 80 % (recorded run, steady)"][0] == "PASS"
    assert got["compile guard passed"][0] == "PASS" and got["graph breaks 0"][0] == "PASS"
    assert got["start-up cold <= 120 s"][0] == "PASS"
    assert got["start-up warm <= 30 s"] == ("PASS", "12.0 s (compile cache partial)", "")
    verdict, measured, nxt = got["J/image: counter and integrated power agree within 3 %"]
    assert verdict == "FAIL" and "11.3 % apart" in measured and "outlier: the integrated power" in nxt


PROFILE_TARGET = "layer profile: GPU time per module (recorded run)"


def test_the_layer_profile_passes_only_with_gpu_time_charged_to_g_and_d(ev) -> None:
    rows = _figures()
    got = {t: (v, m, n) for t, v, m, n in ev.verdicts(rows, "H100")}
    verdict, measured, _ = got[PROFILE_TARGET]
    assert verdict == "PASS" and "G 61.2 ms, D 88.4 ms" in measured and "aten::convolution_backward" in measured
    cold = next(r for r in rows if r["cell"] == "cifar/run-cold")
    cold["profile_d_device_ms"] = 0.0  # kernels that reached no module of D
    verdict, _, nxt = next((v, m, n) for t, v, m, n in ev.verdicts(rows, "H100") if t == PROFILE_TARGET)
    assert verdict == "FAIL" and "correlation ids" in nxt
    cold.update(profile="skipped: bounded by train.max_seconds")
    verdict, measured, nxt = next((v, m, n) for t, v, m, n in ev.verdicts(rows, "H100") if t == PROFILE_TARGET)
    assert (verdict, measured) == ("MISSING", "skipped: bounded by train.max_seconds") and "profile_iters" in nxt


def test_a_busy_gpu_below_target_is_called_gpu_bound(ev) -> None:
    rows = _figures()
    rows[1]["gpu_util_percent_mean"] = 95.0
    (v, _, nxt) = next((v, m, n) for t, v, m, n in ev.verdicts(rows, "H100") if t == "cifar >= 5x reference")
    assert v == "FAIL" and nxt.startswith("GPU-bound: GPU busy 95 %")


def test_the_top_readme_block_is_replaced_and_only_it(ev, tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{ev.README_BEGIN}\nNo GPU run has been recorded yet.\n{ev.README_END}\nafter\n")
    ev.update_top_readme(readme, Path("benchmarks/results/2026-11-27-h100"), f"{ev.TABLE_HEAD}\n|---|\n")
    text = readme.read_text()
    assert text.startswith("intro\n") and text.endswith("after\n") and "No GPU run" not in text
    assert "[benchmarks/results/2026-11-27-h100](benchmarks/results/2026-11-27-h100/README.md)" in text


def test_without_ref_dir_a_reference_cell_is_recorded_absent_and_runs_nothing(tmp_path: Path) -> None:
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("gpu_proof_under_test", BENCH / "gpu_proof.py")
        proof = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = proof  # dataclasses look their module up there
        spec.loader.exec_module(proof)
    finally:
        sys.path.remove(str(BENCH))
        sys.modules.pop("gpu_proof_under_test", None)
    cell = proof.gpu_plan(128)[0]
    ctx = {"gpu": True, "ref_dir": None, "caches": {"shared": tmp_path / "c"}, "out": tmp_path}
    row = proof.run_cell(cell, 60, ctx)
    assert row["cell"] == "cifar/reference" and row["status"] == "reference absent"
    assert "REF_DIR is not set" in row["error"] and "g_iters_per_s" not in row


def test_a_ref_dir_without_the_reference_is_one_clear_error(tmp_path: Path) -> None:
    env = dict(os.environ, REF_DIR=str(tmp_path))
    proc = subprocess.run(
        [sys.executable, str(BENCH / "gpu_proof.py"), "--rehearse", "--out", str(tmp_path / "ev")],
        capture_output=True, text=True, timeout=300, env=env, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 2 and "holds no BigGAN.py" in proc.stdout and "Traceback" not in proc.stderr
    assert not (tmp_path / "ev").exists()
