"""Start-up cost: `bench --help`, `bench status` and `bench record` run in every job and
every CI step, so they must not import the heavy analysis libraries they never use.

Each case runs a fresh interpreter with `-X importtime` (Python's own record of every
module it imported) and fails when pandas, matplotlib, scipy or torch is among them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("pandas", "matplotlib", "scipy", "torch")


def imported(*args: str) -> set[str]:
    """Top-level packages a fresh `python -X importtime ARGS` imported."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", *args], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    names = set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    assert "bench" in names, f"no import trace from {args}: {proc.stderr[-400:]}"
    return names


@pytest.mark.parametrize(
    "args",
    [
        ("-m", "bench", "--help"),
        ("-m", "bench", "status", "--help"),
        ("-m", "bench", "record", "--help"),
        ("-m", "bench", "import", "--help"),
        ("-c", "import bench.in_job.recorder, bench.commands.status, bench.importers"),
    ],
    ids=["help", "status-help", "record-help", "import-help", "recorder-modules"],
)
def test_start_up_imports_no_heavy_library(args: tuple[str, ...]) -> None:
    heavy = sorted(set(HEAVY) & imported(*args))
    assert not heavy, f"`python {' '.join(args)}` imports {', '.join(heavy)} at start-up"


def test_status_reads_its_runs_without_numpy() -> None:
    """`bench status` reads run folders and logs, never a figure: not even numpy (read-only)."""
    names = imported("-m", "bench", "status", "--env", "local")
    assert not (set(HEAVY) | {"numpy"}) & names, sorted((set(HEAVY) | {"numpy"}) & names)


def test_the_trace_would_see_pandas() -> None:
    """The check above can fail: a command that does read records shows pandas."""
    assert "pandas" in imported("-c", "import bench.records.read")


def test_help_of_a_command_still_lists_its_arguments() -> None:
    """Only the chosen command declares its arguments; its --help still shows them all."""
    out = subprocess.run(
        [sys.executable, "-m", "bench", "import", "--help"], cwd=REPO, capture_output=True, text=True, timeout=120
    ).stdout
    assert "dcgm-exporter" in out and "--run-id" in out and "--results" in out
