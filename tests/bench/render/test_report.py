"""`bench report`: deterministic bytes, size bound, index with history, advisor."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from bench.analysis.advisor import advise
from bench.analysis.compare import compare_runs
from bench.cli import main
from bench.commands.report import write_report
from bench.records.read import find_runs
from bench.render.report import ReportResult
from tests.synthetic_records import RunSpec, write_run

COSTS = {
    "satori": {"model": "onprem", "electricity_usd_per_kwh": 0.0839, "pue": 1.2, "node_capex_usd": 50000},
    "moc": {"model": "cloud", "usd_per_gpu_hour": 2.0},
}


def make_results(root: Path, duration_s: float = 60.0, sha: str = "a" * 40, start: float = 1.79e9) -> Path:
    for i in range(3):
        write_run(
            root,
            RunSpec(
                "satori",
                f"s{sha[:2]}{i}",
                sha=sha,
                seed=i,
                gpus=2,
                duration_s=duration_s,
                images_per_s=200,
                start=start + i * 1000,
                cost=COSTS["satori"],
            ),
        )
        write_run(
            root,
            RunSpec(
                "moc",
                f"m{sha[:2]}{i}",
                sha=sha,
                seed=9 + i,
                gpus=1,
                gpu_util=20,
                cpu_pct=390,
                images_per_s=60,
                duration_s=duration_s,
                start=start + i * 1000 + 500,
                cost=COSTS["moc"],
            ),
        )
    return root


@pytest.fixture(scope="session")
def plain_report(tmp_path_factory: pytest.TempPathFactory) -> ReportResult:
    """One report of make_results' runs (results/ beside out/), written once per session (per
    xdist worker) for the tests that only read it or copy it first: each report is seconds of
    CPU. No test writes into these folders."""
    root = tmp_path_factory.mktemp("plain-report")
    return write_report(make_results(root / "results"), root / "out")


def results_of(report: ReportResult) -> Path:
    """The results folder a `plain_report` was written from."""
    return report.folder.parent.parent / "results"


def digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.mark.slow
def test_same_input_gives_identical_bytes(plain_report: ReportResult, tmp_path: Path) -> None:
    first = plain_report
    before = digest(first.folder)
    index_before = first.index.read_bytes()
    second = write_report(results_of(first), tmp_path / "out")
    assert second.folder.name == first.folder.name
    assert digest(second.folder) == before
    assert second.index.read_bytes() == index_before
    assert first.folder.name == "2026-09-21-aaaaaaa"  # date of the runs, not of today


def test_report_contents(plain_report: ReportResult) -> None:
    res = plain_report
    text = res.readme.read_text()
    for heading in (
        "## Summary",
        "## Differences between environments",
        "## Per environment",
        "## Runs",
        "## Charts",
        "## Advisor",
        "## Provenance",
        "## Data problems",
    ):
        assert heading in text
    assert "images/s, whole job (steady, median): satori vs moc: 236 % faster (ratio 3.36" in text  # 200 vs 60 images/s
    for chart in (
        "cpu.png",
        "memory.png",
        "gpu_util.png",
        "gpu_memory.png",
        "images_per_s.png",
        "summary.png",
        "history.png",
    ):
        assert (res.folder / chart).is_file() and f"]({chart})" in text
    assert "None: every run has a complete record." in text
    assert "Tesla V100" in text


@pytest.mark.slow
def test_long_runs_stay_under_one_megabyte(tmp_path: Path) -> None:
    res = write_report(make_results(tmp_path / "results", duration_s=6 * 3600), tmp_path / "out")
    size = sum(p.stat().st_size for p in res.folder.iterdir())
    assert size < 1_000_000, size


@pytest.mark.slow
def test_index_lists_every_report_newest_first(tmp_path: Path) -> None:
    results = tmp_path / "results"
    make_results(results, sha="a" * 40, start=1.79e9)
    make_results(results, sha="b" * 40, start=1.79e9 + 86400 * 3)
    out = tmp_path / "out"
    old = write_report(results, out, commit="aaaa")
    new = write_report(results, out)  # newest commit by default
    assert new.folder.name.endswith("bbbbbbb") and old.folder.name.endswith("aaaaaaa")
    index = (out / "README.md").read_text()
    assert index.index(new.folder.name) < index.index(old.folder.name)
    assert f"({new.folder.name}/history.png)" in index


def test_advisor_flags_low_gpu_and_input_bound(tmp_path: Path) -> None:
    result = compare_runs(find_runs(make_results(tmp_path)))
    advice = advise(result)
    moc = " ".join(advice["moc"])
    assert "GPU busy only" in moc and "looks input-bound" in moc
    assert "memory headroom" in moc and "CPU threads" in moc
    assert "GPU busy only" not in " ".join(advice["satori"])


def test_cli_report_and_compare(tmp_path: Path, capsys) -> None:
    results = make_results(tmp_path / "results")
    assert main(["compare", "--results", str(results), "--out", str(tmp_path / "cmp")]) == 0
    out = capsys.readouterr().out
    assert "| images/s, whole job (steady, median) |" in out
    assert (tmp_path / "cmp" / "compare.json").is_file() and (tmp_path / "cmp" / "runs.csv").is_file()
    pairs = json.loads((tmp_path / "cmp" / "compare.json").read_text())["pairs"]
    ips = next(p for p in pairs if p["metric"] == "images_per_s")
    # the raw p kept, the Benjamini–Hochberg adjusted p added (never below the raw one), and the interval's method
    assert ips["mann_whitney_p"] is not None and ips["mann_whitney_p_bh"] >= ips["mann_whitney_p"]
    assert ips["ci_method"] == "BCa" and {"ratio", "ci95", "runs", "smallest_possible_p", "clear"} <= set(ips)
    assert main(["report", "--results", str(results), "--out", str(tmp_path / "rep")]) == 0
    assert "report: " in capsys.readouterr().out
    assert main(["report", "--results", str(tmp_path / "empty"), "--out", str(tmp_path / "rep")]) == 2
    assert "no runs under" in capsys.readouterr().err


@pytest.mark.slow
def test_a_damaged_report_folder_stays_in_the_index(tmp_path: Path) -> None:
    """A folder whose summary.json is 0 bytes (a report killed by a full disk before this
    fix) is listed with the problem, never dropped silently."""
    results = make_results(tmp_path / "results", sha="a" * 40, start=1.79e9)
    make_results(results, sha="b" * 40, start=1.79e9 + 86400 * 3)
    out = tmp_path / "out"
    old = write_report(results, out, commit="aaaa")
    (old.folder / "summary.json").write_bytes(b"")
    write_report(results, out)
    index = (out / "README.md").read_text()
    line = next(ln for ln in index.splitlines() if old.folder.name in ln)
    assert "summary.json unreadable" in line


@pytest.mark.slow
def test_a_full_disk_during_a_report_is_one_error_and_keeps_the_previous_report(
    small_tmpfs: Path, plain_report: ReportResult
) -> None:
    """Real ENOSPC on a small tmpfs: the report is built in a hidden folder, so the one
    already there stays whole (no 0-byte README.md, runs.csv or summary.json), the error
    names the path, and the exit code is EXIT_DISK_FULL."""
    import subprocess
    import sys

    from bench.records.contract import EXIT_DISK_FULL
    from tests.fullfs import fill

    results = results_of(plain_report)  # only the reports on the small disk: a record's size moves nothing
    out = small_tmpfs / "out"
    shutil.copytree(plain_report.folder.parent, out)  # the report already there
    first = out / plain_report.folder.name
    before = digest(first)
    index_before = (out / "README.md").read_bytes()
    fill(small_tmpfs, leave=8192)
    cmd = [sys.executable, "-m", "bench", "report", "--results", str(results), "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=Path(__file__).resolve().parents[3], timeout=120)
    assert proc.returncode == EXIT_DISK_FULL, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert "No space left on device" in proc.stderr and str(out) in proc.stderr
    assert digest(first) == before and (out / "README.md").read_bytes() == index_before
    assert not [p for p in out.iterdir() if p.name.startswith(".") and p.is_dir()]  # the temporary is gone
    assert all(p.stat().st_size > 0 for p in first.iterdir())


@pytest.mark.slow
def test_two_reports_at_once_both_succeed_and_leave_one_whole_folder(
    plain_report: ReportResult, tmp_path: Path
) -> None:
    """`bench report` twice at once, real processes: both exit 0, the folder and the index
    are whole (same bytes as a report written alone)."""
    import subprocess
    import sys

    results, alone = results_of(plain_report), plain_report
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "bench", "report", "--results", str(results), "--out", str(out)]
    repo = Path(__file__).resolve().parents[3]
    procs = [
        subprocess.Popen(cmd, cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [o[1] for o in outs]
    assert digest(out / alone.folder.name) == digest(alone.folder)
    assert sorted(p.name for p in out.iterdir()) == sorted([alone.folder.name, "README.md", ".atlas.lock"])


@pytest.mark.slow
def test_a_report_killed_half_way_leaves_nothing_the_next_one_keeps(plain_report: ReportResult, tmp_path: Path) -> None:
    results, out = results_of(plain_report), tmp_path / "out"
    first = plain_report
    shutil.copytree(first.folder.parent, out)  # a report already written there
    stale = out / f".{first.folder.name}.tmp-abcd1234"  # what a SIGKILLed report leaves
    stale.mkdir()
    (stale / "README.md").write_text("half")
    write_report(results, out)
    assert not stale.exists()


@pytest.mark.slow
def test_the_index_names_each_reports_machine_and_marks_a_change(tmp_path: Path) -> None:
    results = tmp_path / "results"
    make_results(results, sha="a" * 40, start=1.79e9)
    make_results(results, sha="b" * 40, start=1.79e9 + 86400 * 3)
    for run_json in results.glob("*/*/run.json"):  # the newer commit ran on another CPU
        meta = json.loads(run_json.read_text())
        if meta["git"]["sha"].startswith("b"):
            meta["hardware"]["cpu_model"] = "Other CPU"
            run_json.write_text(json.dumps(meta))
    out = tmp_path / "out"
    write_report(results, out, commit="aaaa")
    new = write_report(results, out)
    summary = json.loads((new.folder / "summary.json").read_text())
    assert summary["machines"]["satori"]["cpu"] == ["Other CPU"] and summary["machines"]["satori"]["cores"] == [8]
    rows = {
        line.split("|")[1].strip(): line
        for line in (out / "README.md").read_text().splitlines()
        if line.startswith("| [")
    }
    newer = next(v for k, v in rows.items() if "bbbbbbb" in k)
    older = next(v for k, v in rows.items() if "aaaaaaa" in k)
    assert "satori: Other CPU, 8 cores" in newer and "host CPU 70" in newer
    assert newer.count("(**another machine** than the report below)") == 2  # both environments moved
    assert "Synthetic CPU" in older and "another machine" not in older
