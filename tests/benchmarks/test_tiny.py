"""Every benchmark script still runs: each at its `--tiny` size, as a user runs it.

Benchmarks print figures and assert nothing, so a script broken by a change in bench/
went unnoticed until someone wanted its figures (report_scale.py once failed at HEAD on
a keyword argument write_report no longer took). Here each runs in a fresh process at a
size that takes seconds; the test fails when it exits non-zero or prints no figures.
The figures themselves are not judged (timings are not tests).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "benchmarks"

# script -> (arguments, a key its JSON output carries). gpu_matrix's GPU cells need a GPU:
# --cpu runs its plumbing on this machine (its no-GPU answer: test_gpu_matrix.py).
# cpu_parity's reference arm needs REF_DIR: without it --tiny steps the Atlas arm alone.
TINY: dict[str, tuple[list[str], str]] = {
    "cpu_parity.py": (["--tiny"], "atlas_s"),
    "gpu_matrix.py": (["--tiny", "--cpu"], "matrix"),
    "history_scale.py": (["--tiny"], "history"),
    "profile_overhead.py": (["--tiny"], "share_of_10min_pct"),
    "report_scale.py": (["--tiny"], "report_over_read"),
    "sacct_parse.py": (["--lines", "300", "--repeat", "1"], "s_per_1000_lines"),
    "sampler_overhead.py": (["--tiny"], "overhead_pct_1hz"),
    "step_overhead.py": (["--tiny"], "aten_ops_per_iter"),
    "timeline_overhead.py": (["--tiny"], "hours"),
    "train_throughput.py": (["--tiny"], "images_per_s"),
    "tree_scale.py": (["--tiny"], "compare"),
}
SKIP_HERE = {
    "gpu_proof.py": "needs a GPU; its own rehearsal test covers it",
    # the GPU proof's own modules (not scripts with figures of their own): its rehearsal runs them
    "gpu_proof_evidence.py": "a module of gpu_proof.py (tests/benchmarks/test_gpu_proof.py)",
    "gpu_proof_record.py": "a module of gpu_proof.py (tests/benchmarks/test_gpu_proof.py, test_gpu_proof_plan.py)",
    "reference_stand_in.py": "a module of gpu_proof.py (tests/benchmarks/test_gpu_proof.py)",
    "reference_timing.py": "gpu_proof.py's reference cell (tests/benchmarks/test_gpu_proof.py)",
}


def test_every_script_has_a_tiny_run() -> None:
    scripts = {p.name for p in BENCHMARKS.glob("*.py")} - set(SKIP_HERE)
    assert scripts == set(TINY), f"benchmarks without a --tiny run here: {sorted(scripts - set(TINY))}"


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(TINY))
def test_tiny_run(script: str, tmp_path: Path) -> None:
    if not (BENCHMARKS / script).is_file():
        pytest.fail(f"benchmarks/{script} is listed here but missing")
    args, key = TINY[script]
    env = {k: v for k, v in os.environ.items() if k not in ("REF_DIR", "REF_SCRIPT")}
    proc = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args],
        cwd=tmp_path,  # nothing lands in the checkout
        env={**env, "TMPDIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"{script} {' '.join(args)} exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    assert f'"{key}"' in proc.stdout, f"{script} printed no {key!r} figure:\n{proc.stdout[-2000:]}"
    for line in proc.stdout.splitlines():
        if line.startswith("{") and line.endswith("}"):
            json.loads(line)  # a one-line figure is well-formed JSON
