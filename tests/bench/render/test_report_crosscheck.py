"""`bench report`'s telemetry cross-check section: one line per finding, none when the
sources agree (bench/analysis/crosscheck.py)."""

from __future__ import annotations

from pathlib import Path

from bench.commands.report import write_report
from tests.synthetic_records import RunSpec, write_run

HEADING = "## Telemetry cross-check"


def write_runs(results: Path, sm_active: float) -> None:
    for i in range(2):
        spec = RunSpec("dgx", f"d{i}", seed=i, gpus=1, gpu_util=94.0, sm_active=sm_active, start=1.79e9 + i)
        write_run(results, spec)


def test_busy_gpu_with_idle_sms_gets_one_line_per_run(tmp_path: Path) -> None:
    write_runs(tmp_path / "results", sm_active=0.18)
    text = write_report(tmp_path / "results", tmp_path / "out").readme.read_text()
    assert HEADING in text
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("- ")]
    assert [line.split(":", 1)[0] for line in lines] == ["- `dgx/d0`", "- `dgx/d1`"]
    assert all("busy, not computing" in line and "SM activity 0.18" in line for line in lines), lines


def test_no_section_when_the_gpu_is_computing(tmp_path: Path) -> None:
    write_runs(tmp_path / "results", sm_active=0.85)
    assert HEADING not in write_report(tmp_path / "results", tmp_path / "out").readme.read_text()
