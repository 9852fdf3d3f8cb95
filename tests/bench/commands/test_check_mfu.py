"""`bench check` lists a record whose compile section and images/s imply an MFU above 100 %
(issue 31): only the report's notes said it before, and check exited 0. Real synthetic
records on disk, checked by the real command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.cli import main
from tests.synthetic_records import RunSpec, write_run


def _gpu_run(root: Path, run_id: str, **compile_facts: object) -> Path:
    run = write_run(root, RunSpec("gpu", run_id, gpus=1, duration_s=20, log_every_s=2))
    meta = json.loads((run / "run.json").read_text())
    meta["hardware"]["gpus"][0]["model"] = "Tesla V100-SXM2-32GB"
    meta["compile"] = {"precision": "float32", **compile_facts}
    (run / "run.json").write_text(json.dumps(meta))
    return run


def test_check_lists_an_mfu_above_100_percent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's case: images_per_g_iteration 1 gave MFU 628 %; check now names it and exits 1."""
    _gpu_run(tmp_path, "one", flops_per_g_iteration=10**12, images_per_g_iteration=1)
    assert main(["check", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if "gpu/one" in line)
    assert "run.json compile: MFU unknown" in line and "above the physical limit of 100 %" in line
    assert "1 with problems (1 problem(s))" in out


def test_check_passes_a_plausible_mfu_and_a_record_without_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The control: the same record with sound counts, and one with no compile counts, pass."""
    _gpu_run(tmp_path, "ok", flops_per_g_iteration=10**9, images_per_g_iteration=8)
    _gpu_run(tmp_path, "none")
    assert main(["check", str(tmp_path)]) == 0, capsys.readouterr().out
    assert "2 run record(s) checked, 0 with problems" in capsys.readouterr().out
