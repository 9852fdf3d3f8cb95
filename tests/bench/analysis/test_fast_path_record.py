"""The fast path's facts end to end: recorded, checked, reported (MFU, J/image, a compile fallback).

Real `Recorder` around real child processes. The GPU run uses the NVML double of the
recorder tests (two fake H100s whose energy counter advances); the fallback run is the
real workload with a torch.compile backend that returns wrong numbers.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from bench.analysis.instrument import instrument_notes, mixed_compile_note
from bench.analysis.metrics import RunMetrics, fmt, run_metrics
from bench.analysis.peak_flops import PEAKS, find_peak, peak_tflops
from bench.cli import main as bench_main
from bench.commands.report import write_report
from bench.in_job.recorder import Recorder
from bench.records.read import load_run
from tests.bench.in_job import nvml_double

REPO = Path(__file__).resolve().parents[3]

FAKE_GPU_JOB = """
import json, sys, time
run_dir = sys.argv[1]
log = open(run_dir + "/train.jsonl", "a")
def emit(**e):
    e.setdefault("time", time.time()); log.write(json.dumps(e) + "\\n"); log.flush()
emit(event="run_start", iteration=0, experiment="gpu", config={"x": 1}, config_sha256="c" * 64,
     device="cuda:0", world_size=1, seed=0, precision="bfloat16")
time.sleep(0.3)
emit(event="warmup", iteration=1, warmup_s=1.0, precision="bfloat16", flops_per_g_iteration=2 * 10**12,
     images_per_g_iteration=100, compile=True, compile_requested=True, compile_guard="passed",
     graph_breaks=0, recompiles=0, compiled_graphs=4, compile_mode="reduce-overhead")
for i in range(1, 7):
    time.sleep(0.25)
    emit(event="train", iteration=i, images_seen=i * 100, images_per_s=500.0, wall_s=i * 0.25)
emit(event="run_stop", iteration=6, status="success", g_sha256="0" * 64, images_seen=600)
"""

WRONG_BACKEND_JOB = """
import sys, torch, torch._dynamo
def backend(gm, example_inputs):
    def run(*args):
        out = gm(*args)
        scale = lambda t: t * 1.5 if isinstance(t, torch.Tensor) and t.is_floating_point() else t
        return type(out)(scale(t) for t in out) if isinstance(out, (list, tuple)) else scale(out)
    return run
torch._dynamo.register_backend(backend, name="atlas_test_wrong")
from workflows.biggan.__main__ import main
sys.exit(main(sys.argv[1:]))
"""


def _record(tmp_path: Path, run_dir: Path, script: str, *args: str) -> int:
    job = tmp_path / "job.py"
    job.write_text(textwrap.dedent(script))
    rec = Recorder(run_dir, run_dir.parent.name, [sys.executable, str(job), *args], interval_s=0.05)
    return rec.run()


@pytest.fixture
def h100_nvml(monkeypatch: pytest.MonkeyPatch):
    energy = {"mj": 0}

    def counter(h: int) -> int:
        energy["mj"] += 5_000  # 5 J per read: the counter only grows
        return energy["mj"]

    monkeypatch.setitem(sys.modules, "pynvml", nvml_double)
    monkeypatch.setattr(nvml_double, "nvmlDeviceGetName", lambda h: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(nvml_double, "nvmlDeviceGetTotalEnergyConsumption", counter)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    nvml_double.state.update(init=0, util_calls=0, fail_after=None)
    yield nvml_double


@pytest.mark.slow
def test_mfu_and_energy_per_image_reach_the_report_of_a_gpu_run(tmp_path: Path, h100_nvml: object) -> None:
    run_dir = tmp_path / "results" / "gpu-env" / "r1"
    assert _record(tmp_path, run_dir, FAKE_GPU_JOB, str(run_dir)) == 0
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["compile"]["compile_guard"] == "passed" and meta["compile"]["flops_per_g_iteration"] == 2 * 10**12
    run = load_run(run_dir)
    m = run_metrics(run)
    why = f"{m.values} problems={run.problems}"  # what a failure under load needs to be understood
    gpus = m.gpus
    assert gpus == 2 and m.peak_tflops == pytest.approx(989.5 * gpus), why
    assert m.achieved_tflops == pytest.approx(500 * 2e12 / 100 / 1e12), why  # 10 TFLOP/s
    assert m.mfu_pct == pytest.approx(100 * 10 / (989.5 * gpus)), why
    assert m.energy_per_image_j is not None and m.energy_per_image_j > 0, why
    assert m.images_per_s_per_w == pytest.approx(1 / m.energy_per_image_j)
    assert m.compiled == 1.0
    # the recorder notes the git state of the checkout the test runs in: uncommitted work there
    # must not drop this run from its own report (the report excludes dirty runs by default)
    text = write_report(tmp_path / "results", tmp_path / "out", allow_dirty=True).readme.read_text()
    assert "MFU (model FLOPs utilisation)" in text and fmt(m.mfu_pct) in text, why
    assert "GPU energy per image" in text and fmt(m.energy_per_image_j) in text, why
    assert "compiled fast path refused" not in text


@pytest.mark.slow
def test_a_wrong_compiled_path_falls_back_and_is_flagged_by_check_and_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    run_dir = results / "cpu-env" / "r1"
    code = _record(
        tmp_path,
        run_dir,
        WRONG_BACKEND_JOB,
        *("--experiment", "smoke", "--run-dir", str(run_dir)),
        *("--set", "runtime.compile=true", "--set", "runtime.compile_backend=atlas_test_wrong"),
        *("--set", f"runtime.compile_cache_dir={tmp_path / 'cache'}", "--set", "train.max_iters=2"),
        *("--set", "train.sample_grid=false"),
    )
    assert code == 0
    facts = json.loads((run_dir / "run.json").read_text())["compile"]
    assert facts["compile"] is False and facts["compile_requested"] is True
    assert facts["compile_guard"].startswith("D step loss differs")
    assert facts["flops_per_g_iteration"] > 0
    capsys.readouterr()
    assert bench_main(["check", str(results)]) == 1
    assert "compiled fast path refused, the run trained eagerly" in capsys.readouterr().out
    text = write_report(results, tmp_path / "out").readme.read_text()
    assert "compiled fast path refused" in text


def _rm(env: str, run_id: str, **values: float | None) -> RunMetrics:
    return RunMetrics(env, run_id, "success", None, None, None, values)


def test_instrument_check_and_mixed_compile_notes() -> None:
    busy = _rm("a", "1", gpu_util_steady_pct=55.0, mfu_pct=10.0, peak_tflops=989.5, compiled=1.0)
    best = _rm("b", "1", gpu_util_steady_pct=97.0, mfu_pct=40.0, peak_tflops=989.5, compiled=0.0)
    other_gpu = _rm("c", "1", gpu_util_steady_pct=95.0, mfu_pct=5.0, peak_tflops=312.0, compiled=1.0)
    runs = [busy, best, other_gpu]
    notes = instrument_notes([busy], runs)
    assert any("GPU busy 55" in n and "measure the job rather than the platform" in n for n in notes)
    assert any("MFU 10" in n and "best recorded run on the same GPU (40" in n for n in notes)
    assert instrument_notes([best], runs) == [
        "how close to the hardware: MFU 40.0 % of the GPUs' dense peak (— TFLOP/s achieved)."
    ]
    assert not any("instrument check" in n for n in instrument_notes([other_gpu], runs))
    (note,) = mixed_compile_note(runs)
    assert "b/1 trained eagerly" in note
    assert mixed_compile_note([busy, other_gpu]) == []


def test_peak_table_knows_the_datasheet_boards_and_nothing_else() -> None:
    assert peak_tflops("NVIDIA H100 80GB HBM3", "bfloat16") == 989.5
    assert peak_tflops("NVIDIA H100 PCIe", "bfloat16") == 756.0
    assert peak_tflops("NVIDIA A100-SXM4-80GB", "float32") == 156.0
    assert peak_tflops("Tesla V100-SXM2-32GB", "float32") == 15.7
    assert peak_tflops("Tesla V100-SXM2-32GB", "bfloat16") is None  # no bf16 tensor cores: no guess
    assert peak_tflops("NVIDIA H200", "bfloat16") == 989.5
    assert find_peak("NVIDIA GeForce RTX 4090") is None and peak_tflops(None, "float32") is None
    assert find_peak("H100") is None and find_peak("NVIDIA RTX A1000") is None  # exact board names only
    assert all(p.source.startswith("https://") for p in PEAKS)
