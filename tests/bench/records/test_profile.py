"""profile.json in the record: read by load_run, named by `bench check` when damaged, and the
profiled iterations left out of steady images/s. The profile and the log come from a real
(tiny, CPU) workload run, placed into a record written by the project's own code."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.cli import main
from bench.records.contract import PROFILE_JSON, TRAIN_JSONL
from bench.records.jobfiles import record_names
from bench.records.read import load_run
from bench.records.trainlog import read_train_log, steady_images_per_s
from tests.synthetic_records import RunSpec, write_run
from tests.workflows.biggan.conftest import run_workload

pytestmark = pytest.mark.slow  # one smoke training run in a subprocess


@pytest.fixture(scope="module")
def workload_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("workload") / "run"
    proc = run_workload(
        run_dir, "train.max_iters=12", "train.log_every=1", "train.sample_grid=false", "train.profile_iters=3"
    )
    assert proc.returncode == 0, proc.stderr
    return run_dir


def _record(tmp_path: Path, workload_run: Path) -> Path:
    run_dir = write_run(tmp_path / "results", RunSpec("local", "r1", gpus=1))
    shutil.copy(workload_run / PROFILE_JSON, run_dir / PROFILE_JSON)
    return run_dir


def test_a_real_profile_reads_clean(tmp_path: Path, workload_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = _record(tmp_path, workload_run)
    data = load_run(run_dir)
    assert data.problems == []
    assert data.profile is not None and {"G.blocks.0", "D.blocks.0"} <= set(data.profile["modules"])
    assert main(["check", str(tmp_path / "results")]) == 0
    assert "0 with problems" in capsys.readouterr().out


def test_a_record_without_a_profile_has_no_problem(tmp_path: Path) -> None:
    data = load_run(write_run(tmp_path / "results", RunSpec("local", "r1", gpus=1)))
    assert data.profile is None and not any(PROFILE_JSON in p for p in data.problems)


def _edit(fn: Callable[[dict], object]) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        doc = json.loads(path.read_text())
        new = fn(doc)
        path.write_text(json.dumps(doc if new is None else new))

    return damage


DAMAGES: dict[str, tuple[Callable[[Path], None], str]] = {
    "cut off": (lambda p: p.write_bytes(p.read_bytes()[:100]), "profile.json is not JSON"),
    "not UTF-8": (lambda p: p.write_bytes(b"\xff\xfe{"), "profile.json is not JSON"),
    "a list": (_edit(lambda d: [d]), "profile.json is not a JSON object (a list)"),
    "no modules": (_edit(lambda d: d.pop("modules") and None), "'modules' is a required property"),
    "negative time": (
        _edit(lambda d: d["modules"]["G.blocks.0"]["forward"].update(cpu_us=-5)),
        "modules.G.blocks.0.forward.cpu_us",
    ),
    "NaN time": (
        lambda p: p.write_text(p.read_text().replace('"window_s": ', '"window_s": NaN, "x": ', 1)),
        "window_s",
    ),
    "operators not a list": (_edit(lambda d: d.update(top_operators="conv")), "top_operators"),
}


@pytest.mark.parametrize("name", sorted(DAMAGES))
def test_a_damaged_profile_is_one_named_problem(
    name: str, tmp_path: Path, workload_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    damage, needle = DAMAGES[name]
    run_dir = _record(tmp_path, workload_run)
    damage(run_dir / PROFILE_JSON)
    assert main(["check", str(tmp_path / "results")]) == 1
    out = capsys.readouterr().out
    named = [line for line in out.splitlines() if PROFILE_JSON in line]
    assert len(named) == 1 and needle in named[0], out
    assert "Traceback" not in out
    assert load_run(run_dir).profile is None


def test_profiled_lines_are_left_out_of_steady_images_per_s(workload_run: Path) -> None:
    log = read_train_log(workload_run / TRAIN_JSONL)
    trains = log.of("train")
    assert [t["iteration"] for t in trains if t.get("profiled")] == [2, 3, 4]
    steady = list(steady_images_per_s(log))
    # 12 lines: the first 2 are warm-up (20 %); of the rest, 3 and 4 were profiled
    assert steady == [t["images_per_s"] for t in trains if t["iteration"] >= 5]
    unmarked = read_train_log(workload_run / TRAIN_JSONL)
    for t in unmarked.of("train"):
        t.pop("profiled", None)
    assert len(steady_images_per_s(unmarked)) == len(steady) + 2


def test_collection_copies_the_profile() -> None:
    assert PROFILE_JSON in record_names(["run.json", TRAIN_JSONL, PROFILE_JSON, "core.123"])
