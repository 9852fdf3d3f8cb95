"""A run that shared a busy host is named by `bench check` and the report, and gives no advice."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench.analysis.advisor import advise
from bench.analysis.compare import compare_runs
from bench.analysis.contention import contended
from bench.analysis.metrics import run_metrics
from bench.commands.report import write_report
from bench.records.read import find_runs, load_run
from tests.synthetic_records import RunSpec, write_run

REPO = Path(__file__).resolve().parents[3]


def test_a_busy_host_is_named_and_the_advisor_leaves_it_out(tmp_path: Path) -> None:
    results = tmp_path / "results"
    for i in range(3):  # the job uses 1.5 of its 4 cores; the host is 97 % busy, or 70 % on the quiet env
        write_run(results, RunSpec("busy", f"b{i}", seed=i, host_cpu_pct=97.0))
        write_run(results, RunSpec("quiet", f"q{i}", seed=10 + i))
    why = contended(run_metrics(load_run(results / "busy" / "b0")))
    assert why and "machine's CPU was 96.6 % busy" in why and "used 1.51 of its 4.00 cores" in why
    assert contended(run_metrics(load_run(results / "quiet" / "q0"))) is None
    # a job that itself fills its cores on a busy host is no victim of other work
    write_run(tmp_path / "own", RunSpec("own", "o", host_cpu_pct=97.0, cpu_pct=390.0))
    assert contended(run_metrics(load_run(tmp_path / "own" / "own" / "o"))) is None

    advice = advise(compare_runs(find_runs(results)))
    busy, quiet = " ".join(advice["busy"]), " ".join(advice["quiet"])
    assert "no CPU thread or memory advice: all 3 run(s) shared a busy host" in busy and "suggest" not in busy
    assert "CPU threads: the job used" in quiet and "memory headroom" in quiet

    readme = write_report(results, tmp_path / "reports", allow_different=True).readme.read_text()
    section = readme.split("## Runs on a busy host", 1)[1].split("\n## ", 1)[0]
    assert all(f"`busy/b{i}`" in section for i in range(3)) and "quiet/" not in section

    check = subprocess.run(
        [sys.executable, "-m", "bench", "check", str(results)], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert check.returncode == 0, check.stdout + check.stderr  # a warning, not a problem of the record
    warned = [line for line in check.stdout.splitlines() if ": warning: host busy with other work" in line]
    assert sorted(Path(line.split(":")[0]).name for line in warned) == ["b0", "b1", "b2"]
