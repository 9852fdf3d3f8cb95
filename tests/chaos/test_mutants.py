"""The chaos trials must catch the faults they exist for: each mutant below is applied to
a scratch copy of this working tree, and the recorder-kill trial run there must fail.

Why: a check that passes whatever the code does is no check. The issue that added this
found a trial that checked cost per second, which a wall time forgetting the killed
attempt (cost moving with it) passed. Each mutant is one textual change to real code:

- never resume: the workload finds no checkpoint (`load_latest` sees none);
- oldest checkpoint: it resumes from the oldest bundle instead of the newest;
- last attempt only: the recorder keeps no earlier attempt in `previous_attempts`;
- wall of the last attempt only: wall time (and so cost) counts the last attempt alone.

Cost: one uninterrupted reference run, made once per session by the unmutated tree and
shared with test_chaos.py (none of the mutants changes a run that is never interrupted),
and one killed-and-resumed run per mutant (trial 5: a recorder killed after three
checkpoints, so there are older ones to pick wrongly; a recorder trial collects no
finished runs, so the scratch session records none).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.chaos.test_chaos import REFERENCE_VARIABLE, reference_file_of_session

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TRIAL = "5"  # KINDS[5] is a recorder kill; with seed 16 it waits for 3 checkpoints
MUTANTS = {
    "never-resume": (
        "workflows/biggan/checkpoint.py",
        "    candidates = list_checkpoints(run_dir)\n    problems = []",
        "    candidates = []\n    problems = []",
    ),
    "oldest-checkpoint": (
        "workflows/biggan/checkpoint.py",
        "    candidates = list_checkpoints(run_dir)\n    problems = []",
        "    candidates = list_checkpoints(run_dir)[::-1]\n    problems = []",
    ),
    "last-attempt-only": (
        "bench/in_job/recorder.py",
        'previous.append({k: old.get(k) for k in ("start_time", "end_time", "exit", "hosts", "scheduler")})',
        "previous = []",
    ),
    "wall-of-last-attempt-only": (
        "bench/analysis/attempts.py",
        "    return float(sum(e - s for s, e in spans)) if spans else None",
        "    return float(spans[-1][1] - spans[-1][0]) if spans else None",
    ),
}


def scratch_copy(into: Path) -> Path:
    """This working tree's files (tracked, and untracked ones git does not ignore)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, capture_output=True, check=True, timeout=60,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    return into


@pytest.fixture(scope="module")
def reference_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The uninterrupted run, made once by this (unmutated) tree for every mutant's trial
    (and shared with test_chaos.py's trials): none of the mutants changes an uninterrupted
    run, and the truth is this tree's."""
    return reference_file_of_session(tmp_path_factory)


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_each_mutant_fails_the_chaos_trial(name: str, tmp_path: Path, reference_file: Path) -> None:
    path, original, mutated = MUTANTS[name]
    scratch = scratch_copy(tmp_path / "scratch")
    text = (scratch / path).read_text()
    assert text.count(original) == 1, f"mutant {name}: {path} no longer holds the line it changes; update it"
    (scratch / path).write_text(text.replace(original, mutated))
    env = dict(os.environ, ATLAS_CHAOS_TRIALS=str(int(TRIAL) + 1), ATLAS_CHAOS_SEED="16")
    env.pop("ATLAS_CHAOS_LOG", None)
    env[REFERENCE_VARIABLE] = str(reference_file)
    env["PYTHONPATH"] = str(scratch)  # the mutated copy, not this tree (bench is installed editable)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
         f"tests/chaos/test_chaos.py::test_a_random_kill_loses_nothing[{TRIAL}]"],
        cwd=scratch, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    summary = proc.stdout[-3000:]
    assert "1 passed" not in summary and "no tests ran" not in summary, summary
    assert proc.returncode == 1 and "1 failed" in summary, f"mutant {name} survived the chaos trial:\n{summary}"
