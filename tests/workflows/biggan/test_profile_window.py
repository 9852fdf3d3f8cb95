"""The profile window: a real smoke run writes profile.json and marks its profiled iterations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.workflows.biggan.conftest import events, run_workload
from workflows.biggan.config import resolve
from workflows.biggan.errors import WorkloadConfigError

pytestmark = pytest.mark.slow  # each test trains the smoke job in a subprocess

JOB = ("train.max_iters=8", "train.log_every=1", "train.sample_grid=false", "train.checkpoint_every=0")


@pytest.fixture(scope="module")
def profiled_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("profiled") / "run"
    proc = run_workload(run_dir, *JOB, "train.profile_iters=3")
    assert proc.returncode == 0, proc.stderr
    return run_dir


def test_profile_json_holds_modules_of_g_and_d_and_top_operators(profiled_run: Path) -> None:
    doc = json.loads((profiled_run / "profile.json").read_text())
    assert doc["iterations"] == {"first": 2, "last": 4, "count": 3}  # after the warm-up iteration
    assert doc["device"] == "cpu" and doc["activities"] == ["cpu"]
    import torch

    assert doc["torch"] == torch.__version__
    modules = doc["modules"]
    for name in ("G", "D", "G.blocks.0", "G.out_conv", "D.blocks.0", "D.out"):
        assert modules[name]["forward"]["cpu_us"] > 0, name
        assert modules[name]["backward"]["cpu_us"] > 0, name
    # G runs 3 times an iteration (2 D steps, 1 G step), over 3 iterations
    assert modules["G"]["forward"]["calls"] == 9 and modules["D"]["forward"]["calls"] == 9
    assert (
        sum(m["forward"]["cpu_us"] for k, m in modules.items() if k.startswith("G."))
        <= modules["G"]["forward"]["cpu_us"]
    )
    ops = doc["top_operators"]
    assert len(ops) == 15 and all(o["name"] and o["calls"] > 0 for o in ops)
    assert [o["self_cpu_us"] for o in ops] == sorted((o["self_cpu_us"] for o in ops), reverse=True)
    assert not any(o["name"].endswith((" forward", " backward")) for o in ops)  # module ranges are not operators
    assert (profiled_run / "profile.json").stat().st_size < 16_000


def test_the_train_lines_of_profiled_iterations_are_marked(profiled_run: Path) -> None:
    trains = [e for e in events(profiled_run) if e["event"] == "train"]
    assert [e["iteration"] for e in trains] == list(range(1, 9))
    assert [e["iteration"] for e in trains if e.get("profiled")] == [2, 3, 4]


def test_a_resumed_run_keeps_its_first_profile(profiled_run: Path) -> None:
    before = (profiled_run / "profile.json").read_bytes()
    proc = run_workload(profiled_run, *JOB[1:], "train.max_iters=10", "train.profile_iters=3")
    assert proc.returncode == 0, proc.stderr
    assert (profiled_run / "profile.json").read_bytes() == before
    resumed = [e for e in events(profiled_run) if e["event"] == "train" and e["iteration"] > 8]
    assert resumed and not any(e.get("profiled") for e in resumed)


def test_zero_turns_the_window_off(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc = run_workload(run_dir, *JOB, "train.max_iters=4", "train.profile_iters=0")
    assert proc.returncode == 0, proc.stderr
    assert not (run_dir / "profile.json").exists()
    assert not any(e.get("profiled") for e in events(run_dir))


def test_a_window_longer_than_the_run_stops_at_its_end(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc = run_workload(run_dir, *JOB, "train.max_iters=3", "train.profile_iters=50")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((run_dir / "profile.json").read_text())
    assert doc["iterations"] == {"first": 2, "last": 3, "count": 2}


def test_profile_iters_is_validated_like_every_key() -> None:
    assert resolve("smoke")["train.profile_iters"] is None  # auto unless asked for
    with pytest.raises(WorkloadConfigError, match="train.profile_iters=-1 must be >= 0"):
        resolve("smoke", ["train.profile_iters=-1"])
    with pytest.raises(WorkloadConfigError, match="train.profile_iters must be an integer"):
        resolve("smoke", ["train.profile_iters=two"])
