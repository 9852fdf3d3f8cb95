"""Steal and iowait: a run whose host lent its CPUs to other guests or stalled on I/O is flagged
in its own words (recorder columns, sar's %steal/%iowait), and the report shows the headline
figures with and without the busy runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from bench.analysis.compare import compare_runs
from bench.analysis.contention import contended, with_and_without
from bench.analysis.metrics import run_metrics
from bench.commands.report import write_report
from bench.records.read import find_runs, load_run
from tests.synthetic_records import RunSpec, write_run

REPO = Path(__file__).resolve().parents[3]


def _bench(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bench", *map(str, args)], cwd=REPO, capture_output=True, text=True, timeout=120
    )


def test_steal_and_iowait_are_flagged_in_their_own_words(tmp_path: Path) -> None:
    results = tmp_path / "results"
    write_run(results, RunSpec("vm", "stolen", steal_pct=15.0))  # host CPU 70 %: the busy-host rule stays quiet
    write_run(results, RunSpec("vm", "waiting", iowait_pct=25.0, seed=1))
    write_run(results, RunSpec("vm", "fine", steal_pct=5.0, iowait_pct=10.0, seed=2))  # under both cuts
    why = {r.run_id: contended(run_metrics(load_run(r.path))) for r in find_runs(results)}
    assert why["stolen"] == (
        "CPU taken by the hypervisor: 15.0 % steal on average (≥ 10 %), other guests of the same physical host "
        "ran on its cores; its figures are not the platform's alone"
    )
    assert why["waiting"] and why["waiting"].startswith("host waiting on I/O: 25.0 % iowait on average (≥ 20 %)")
    assert why["fine"] is None

    check = _bench("check", results)
    assert check.returncode == 0, check.stdout + check.stderr
    warned = sorted(line.split(":")[0].rsplit("/", 1)[1] for line in check.stdout.splitlines() if ": warning: " in line)
    assert warned == ["stolen", "waiting"]
    assert "warning: CPU taken by the hypervisor" in check.stdout and "warning: host waiting on I/O" in check.stdout


def test_the_report_shows_the_headline_figures_with_and_without_the_busy_runs(tmp_path: Path) -> None:
    results = tmp_path / "results"
    # `mixed`: 3 runs beside a CPU burner (host 97 %, the job 1.5 of its 4 cores) at 50 img/s,
    # 2 on a quiet host at 100 img/s; `calm`: 3 quiet runs.
    for i in range(3):
        write_run(results, RunSpec("mixed", f"busy{i}", seed=i, host_cpu_pct=97.0, images_per_s=50.0))
        write_run(results, RunSpec("calm", f"c{i}", seed=20 + i))
    for i in range(2):
        write_run(results, RunSpec("mixed", f"quiet{i}", seed=10 + i, images_per_s=100.0))

    result = compare_runs(find_runs(results))
    effects = {e.metric: e for e in with_and_without(result) if e.env == "mixed"}
    assert {e.env for e in with_and_without(result)} == {"mixed"}
    ips = effects["images_per_s"]
    assert (ips.runs, ips.quiet_runs) == (5, 2)
    assert ips.all_median == pytest.approx(50, rel=0.03) and ips.quiet_median == pytest.approx(100, rel=0.03)

    readme = write_report(results, tmp_path / "reports", allow_different=True).readme.read_text()
    summary = readme.split("## Summary", 1)[1].split("\n## ", 1)[0]
    assert "Busy host: 3 of 5 compared run(s) of mixed shared their machine with other work" in summary
    section = readme.split("## Runs on a busy host", 1)[1].split("\n## ", 1)[0]
    assert all(f"`mixed/busy{i}`" in section for i in range(3)) and "`mixed/quiet" not in section
    row = next(line for line in section.splitlines() if line.startswith("| mixed | images/s, whole job"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3].endswith("(n = 5)") and cells[4].endswith("(n = 2)")
    assert float(cells[3].split()[0]) == pytest.approx(ips.all_median, rel=1e-2)
    assert float(cells[4].split()[0]) == pytest.approx(ips.quiet_median, rel=1e-2)
    assert cells[5] == f"{(ips.all_median / ips.quiet_median - 1) * 100:+.1f} %"  # about -50 %
    assert "| calm |" not in section


SAR = """Linux 5.15.0-91-generic (vm7)  2024-03-14  _x86_64_  (8 CPU)

10:00:00     CPU     %user     %nice   %system   %iowait    %steal     %idle
{rows}
"""


def test_an_import_of_sar_carries_steal_and_iowait_and_is_flagged(tmp_path: Path) -> None:
    steal = [28.0, 32.0, 30.0, 34.0]
    rows = "\n".join(
        f"10:00:{5 * (i + 1):02d}     all     20.00      0.00      5.00      1.50     {s:5.2f}     {73.5 - s:5.2f}"
        for i, s in enumerate(steal)
    )
    log = tmp_path / "sar.txt"
    log.write_text(SAR.format(rows=rows))
    results = tmp_path / "results"
    done = _bench("import", "--format", "sar", "--env", "cloudvm", "--run-id", "s1", "--results", results, log)
    assert done.returncode == 0, done.stdout + done.stderr
    samples = pd.read_csv(next((results / "cloudvm" / "s1").glob("samples-*.csv")))
    assert samples["host_cpu_steal_percent"].tolist() == steal
    assert samples["host_cpu_iowait_percent"].tolist() == [1.5] * 4
    m = run_metrics(load_run(results / "cloudvm" / "s1"))
    assert m.host_steal_pct == pytest.approx(31.0) and m.host_iowait_pct == pytest.approx(1.5)
    assert (contended(m) or "").startswith("CPU taken by the hypervisor: 31.0 % steal")
