"""How the GPU proof spends its budget, from what its first GPU run (H100, 2026-11-27) taught:
an overrunning cell must not take the recorded runs' time, a recorded run must end inside
its limit, and the long imagenet128 cells can be run alone. No GPU needed: the plan, the
limits and the verdicts are plain functions."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "benchmarks"
H100_RUN = BENCH / "results" / "2026-11-27-h100-80gb-hbm3"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up while it is built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def proof() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        yield _load("gpu_proof")
    finally:
        sys.path.remove(str(BENCH))
        sys.modules.pop("gpu_proof", None)


def test_the_required_cells_fit_the_default_budget_and_come_before_the_long_ones(proof) -> None:
    plan = proof.gpu_plan(128)
    required = [c for c in plan if not c.optional]
    assert sum(c.estimate_s for c in required) <= proof.DEFAULT_BUDGET_S
    names = [c.name for c in plan]
    last_required = max(names.index(c.name) for c in required)
    assert all(c.optional for c in plan[last_required + 1 :])
    assert {"cifar/run-cold", "cifar/run-warm", "cifar/host-overhead"} <= {c.name for c in required}
    assert {c.name for c in plan if c.optional} >= {"imagenet128/default", "imagenet128-deep/default"}


def test_a_cell_never_eats_the_estimates_of_the_required_cells_after_it(proof) -> None:
    plan = proof.gpu_plan(128)
    i128 = next(c for c in plan if c.name == "imagenet128/default")
    records = [c for c in plan if c.kind == "record"]
    reserve = sum(c.estimate_s for c in records)
    # 400 s left, the recorded runs after it: it gets what they leave, but at least its estimate
    assert proof.cell_limit(i128, 400.0, records) == max(400.0 - reserve, i128.estimate_s)
    # nothing after it: its own limit or what is left
    assert proof.cell_limit(i128, 1000.0, []) == i128.budget_s
    assert proof.cell_limit(i128, 100.0, []) == 100.0


def test_a_recorded_run_is_shortened_to_end_inside_its_limit(proof) -> None:
    cold = next(c for c in proof.gpu_plan(128) if c.name == "cifar/run-cold")
    planned = float(cold.overrides[0].split("=")[1])
    assert proof.fit_to_limit(cold, 1000.0).overrides == cold.overrides  # room enough: as planned
    short = proof.fit_to_limit(cold, 160.0)
    seconds = float(short.overrides[0].split("=")[1])
    assert seconds < planned and seconds + cold.start_s + 45.0 <= 160.0
    assert cold.overrides[0] == f"train.max_seconds={planned:g}"  # the plan itself is left as it was
    overhead = next(c for c in proof.gpu_plan(128) if c.kind == "overhead")
    assert proof.fit_to_limit(overhead, 5.0) is overhead


def test_cells_selects_by_pattern_and_makes_them_required(proof) -> None:
    picked = proof.select_cells(proof.gpu_plan(128), "imagenet128/*")
    assert [c.name for c in picked] == ["imagenet128/reference", "imagenet128/default"]
    assert not any(c.optional for c in picked)
    both = proof.select_cells(proof.gpu_plan(128), "cifar/run-*, imagenet128-deep/default")
    assert [c.name for c in both] == ["cifar/run-cold", "cifar/run-warm", "imagenet128-deep/default"]
    assert proof.select_cells(proof.gpu_plan(128), "nothing/*") == []


def test_a_partial_run_says_not_run_for_the_targets_it_left_out(proof) -> None:
    ev = sys.modules["gpu_proof_evidence"]
    rows = [
        {"cell": "imagenet128/reference", "impl": "reference", "status": "ok", "g_iters_per_s": 1.0},
        {"cell": "imagenet128/default", "impl": "atlas", "status": "ok", "g_iters_per_s": 3.6},
    ]
    found = {t: (v, n) for t, v, _, n in ev.verdicts(rows, "NVIDIA H100 80GB HBM3")}
    assert found["imagenet128 >= 3.5x reference"][0] == "PASS"
    assert found["cifar >= 5x reference"][0] == "NOT RUN"
    assert "--cells 'cifar/*'" in found["cifar >= 5x reference"][1]
    assert not any(t.startswith("recorded") or t.startswith("start-up") for t in found)


def test_the_h100_run_record_reads_with_its_compile_cache_state(proof) -> None:
    """The first GPU run's recorded run (kept as evidence): the cache state comes from the
    workload's warmup event, which run.json's compile facts do not carry."""
    figures = sys.modules["gpu_proof_record"].record_figures(H100_RUN / "run-60s")
    assert figures["compile_cache"] == "cold"
    assert figures["compile_guard"] == "passed" and figures["graph_breaks"] == 0
    assert 0 < figures["gpu_util_steady_pct"] < 100 and figures["images_per_s"] > 1000
    a, b = figures["counter_j_per_image"], figures["power_j_per_image"]
    assert abs(a - b) / ((a + b) / 2) < 0.03  # NVML's energy counter and integrated power agree
