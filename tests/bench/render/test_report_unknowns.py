"""Issue 22: reports agree with `bench check`, print no `None`, keep unknowns unknown, write
times in full precision and integers as integers."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from bench.cli import main
from tests.bench.importers.conftest import SAMPLES
from tests.synthetic_records import RunSpec, write_run


def rows(path: Path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


def test_runs_csv_keeps_full_precision_times_and_integers(tmp_path: Path, capsys) -> None:
    write_run(tmp_path / "results", RunSpec("a", "a0", start=1_795_461_234.567))
    write_run(tmp_path / "results", RunSpec("a", "a1", start=1_795_461_834.125, seed=1))
    assert main(["report", "--results", str(tmp_path / "results"), "--out", str(tmp_path / "reports")]) == 0
    table = rows(next((tmp_path / "reports").glob("*/runs.csv")))
    assert [r["start_time"] for r in table] == ["1795461234.567", "1795461834.125"]
    assert {r["attempts"] for r in table} == {"1"}
    assert {r["gpus"] for r in table} == {"0"}


@pytest.fixture
def imported_report(tmp_path: Path, capsys) -> tuple[Path, str]:
    """A new user's first report: a CPU-only import on the cloud env and a GPU import on-prem."""
    results = tmp_path / "results"
    for env, files in (("moc", ["sar:" + str(SAMPLES / "sar-u-r-12h.txt")]),
                       ("satori", ["sar:" + str(SAMPLES / "sar-u-r-12h.txt"),
                                   "dcgmi-dmon:" + str(SAMPLES / "dcgmi-dmon.txt")])):  # fmt: skip
        code = main(
            ["import", "--env", env, "--run-id", f"{env}-1", "--results", str(results), "--interval", "5", *files]
        )
        assert code == 0, capsys.readouterr().err
    capsys.readouterr()
    main(["check", str(results)])
    check_out = capsys.readouterr().out
    assert main(["report", "--results", str(results), "--out", str(tmp_path / "reports")]) == 0
    folder = next(p for p in (tmp_path / "reports").iterdir() if p.is_dir())
    return folder, check_out


def test_an_imported_report_prints_no_none_and_no_zero_cost(imported_report: tuple[Path, str]) -> None:
    folder, _ = imported_report
    text = (folder / "README.md").read_text()
    assert "None" not in text.replace("None: every run", "")
    assert "× None" not in text and "1×0" not in text
    moc = next(r for r in rows(folder / "runs.csv") if r["env"] == "moc")
    assert moc["cost_usd"] == "" and moc["gpus"] == ""  # GPUs unknown: cost unknown, not $0
    assert "GPU count unknown" in moc["cost_note"]


def test_an_imported_report_keeps_unknown_limits_unknown(imported_report: tuple[Path, str]) -> None:
    folder, _ = imported_report
    for row in rows(folder / "runs.csv"):
        assert row["cpu_limit_cores"] == ""  # the host's 160 cores are not the job's allowance


def test_data_problems_are_what_bench_check_prints(imported_report: tuple[Path, str]) -> None:
    folder, check_out = imported_report
    text = (folder / "README.md").read_text()
    section = text.split("## Data problems", 1)[1]
    listed = [line for line in section.splitlines() if line.startswith("- ")]
    problem_lines = [line for line in check_out.splitlines() if ": " in line and "checked" not in line]
    assert len(listed) == len({line.split(": ", 1)[0] for line in problem_lines})
    if not problem_lines:
        assert "None: every run has a complete record." in section


def test_an_advisor_heading_always_has_something_under_it(imported_report: tuple[Path, str]) -> None:
    folder, _ = imported_report
    section = (folder / "README.md").read_text().split("## Advisor", 1)[1].split("\n## ", 1)[0]
    assert section.strip()
    blocks = [b for b in section.split("**")[1::2]]
    for env in blocks:
        after = section.split(f"**{env}**", 1)[1].strip()
        assert after.startswith("- "), section
