"""The worked example of docs/import-a-study.md, end to end in a tmp folder: make the
sheets, one `bench import` per platform, `bench report`. The report's mean GPU
utilisation of the job's GPU and host CPU utilisation (100 - %idle) must equal the
figures computed here from the sheets with plain csv and statistics code, and each
platform's three sheets must be one run."""

from __future__ import annotations

import csv
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from bench.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "study"
WALKTHROUGH = ROOT / "docs" / "import-a-study.md"
PLATFORMS = {"a": ("study-a", "2026-03-02", ",", "."), "b": ("study-b", "2026-03-09", ";", ",")}


def column_mean(path: Path, column: str, delimiter: str, decimal: str, of=lambda v: v) -> float:
    """Mean of one column's non-empty cells, read with the csv module only."""
    with path.open(newline="") as fh:
        cells = [row[column] for row in csv.DictReader(fh, delimiter=delimiter)]
    return statistics.fmean(of(float(c.replace(decimal, "."))) for c in cells if c.strip())


def independent(sheets: Path, delimiter: str, decimal: str) -> dict[str, float]:
    """The study's own figures: GPU 1's mean utilisation (%) and the host's mean 100 - %idle."""
    return {
        "gpu_util_mean_pct": column_mean(sheets / "gpu.csv", "GPU1 util", delimiter, decimal, lambda v: 100 * v),
        "host_cpu_util_pct": column_mean(sheets / "cpu.csv", "%idle", delimiter, decimal, lambda v: 100 - v),
    }


def test_study_sheets_become_one_run_per_platform_and_the_report_matches_the_sheets(tmp_path: Path, capsys) -> None:
    work = tmp_path / "study"
    work.mkdir()
    for name in ("platform-a.yaml", "platform-b.yaml"):
        shutil.copy(EXAMPLE / name, work / name)
    subprocess.run([sys.executable, str(EXAMPLE / "make_sheets.py"), "--out", str(work)], check=True)
    results, reports = tmp_path / "results", tmp_path / "reports"
    for key, (env, day, _, _) in PLATFORMS.items():
        code = main(
            ["import", "--map", str(work / f"platform-{key}.yaml"), "--date", day, "--timezone", "Europe/Berlin"]
            + ["--env", env, "--run-id", f"{key}1", "--results", str(results)]
        )
        assert code == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "ignored (not in the map or not read): Sample, GPU0 util" in out
    assert "warning: unit 'kB' read with the sysstat meaning" in out  # platform B's memory sheet
    assert main(["report", "--results", str(results), "--out", str(reports)]) == 0
    folder = next(p for p in reports.iterdir() if p.is_dir())
    with (folder / "runs.csv").open() as fh:
        runs = {row["env"]: row for row in csv.DictReader(fh)}
    readme = (folder / "README.md").read_text()
    assert sorted(runs) == ["study-a", "study-b"]  # each platform one run, not one per sheet
    for key, (env, _, delimiter, decimal) in PLATFORMS.items():
        run_dirs = [p for p in (results / env).iterdir() if p.is_dir()]
        assert [p.name for p in run_dirs] == [f"{key}1"]
        record = json.loads((run_dirs[0] / "run.json").read_text())
        assert sorted(s["file"] for s in record["import"]["sources"]) == ["cpu.csv", "gpu.csv", "memory.csv"]
        # 12-hour sheets across noon and midnight: the run lasts as long as the sheet's rows say
        rows = sum(1 for _ in (work / f"platform-{key}" / "cpu.csv").open()) - 1
        step = 60 if key == "a" else 30
        assert record["end_time"] - record["start_time"] == (rows - 1) * step
        expected = independent(work / f"platform-{key}", delimiter, decimal)
        row = next(line for line in readme.splitlines() if line.startswith(f"| {env} | {key}1 |"))
        for metric, value in expected.items():
            assert float(runs[env][metric]) == pytest.approx(value, abs=1e-6), (env, metric)
            assert 10 <= value < 100 and f" {value:.1f} |" in row, (metric, value, row)  # 3 significant digits
            assert f"| {value:.6f} | {value:.6f} |" in WALKTHROUGH.read_text(), (metric, value)  # the docs state it
