"""Shared fixtures for tests that need the real local Slurm (tests/ansible, tests/bench/targets).

`local_slurm` starts the single-node Slurm once per session with scripts/local-slurm.sh
(installing Debian's packages when missing, which needs root) and stops it at the end
if this session started it. `standin_repo` is a throw-away git repository holding this
working tree's `bench` package and a test double of the workload, so the Slurm/Ansible
mechanics are tested in seconds; the end-to-end test uses the real repository.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "local-slurm.sh"
SLURM_CONF = REPO / ".slurm" / "etc" / "slurm.conf"
# The tests' own code and run folders on the shared local Slurm (clusters/local-slurm's
# group_vars read ATLAS_SLURM_WORK): a user's `bench collect --env local-slurm` never
# sees a test run, and the session removes them all at the end.
TEST_WORK = REPO / ".slurm" / "test-work"
RUNS = TEST_WORK / "runs"
STANDIN = Path(__file__).with_name("standin_workload.py")


def _script(*args: str, timeout: int = 1800) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def local_slurm() -> Iterator[dict[str, str]]:
    """SLURM_CONF of a running local Slurm; skips (with the reason) only where it cannot run."""
    if shutil.which("sbatch") is None and os.geteuid() != 0:
        pytest.skip(
            "Slurm is not installed and this user is not root: "
            "run `sudo scripts/local-slurm.sh up` (or `make slurm-up` as root)"
        )
    was_up = _script("status", timeout=60).returncode == 0
    if not was_up:
        up = _script("up")
        if up.returncode != 0:
            if os.geteuid() != 0:
                pytest.skip(f"cannot start the local Slurm without root: {up.stderr.strip()}")
            pytest.fail(f"scripts/local-slurm.sh up failed:\n{up.stderr}")
    previous = os.environ.get("ATLAS_SLURM_WORK")
    os.environ["ATLAS_SLURM_WORK"] = str(TEST_WORK)
    try:
        yield {"SLURM_CONF": str(SLURM_CONF), "ATLAS_SLURM_WORK": str(TEST_WORK)}
    finally:
        _cancel_test_jobs()
        shutil.rmtree(TEST_WORK, ignore_errors=True)
        if previous is None:
            os.environ.pop("ATLAS_SLURM_WORK", None)
        else:
            os.environ["ATLAS_SLURM_WORK"] = previous
        if not was_up:
            _script("down", timeout=120)


def _cancel_test_jobs() -> None:
    """scancel every job still queued or running from the tests' run folders."""
    ids = [
        line.split("\t", 1)[0]
        for tsv in RUNS.glob("*/slurm-jobs.tsv")
        for line in tsv.read_text().splitlines()
        if line.split("\t", 1)[0].isdigit()
    ]
    if ids and shutil.which("scancel"):
        subprocess.run(["scancel", *ids], env=slurm_env(), capture_output=True, timeout=60, check=False)


def slurm_env() -> dict[str, str]:
    return {**os.environ, "SLURM_CONF": str(SLURM_CONF)}


@pytest.fixture(scope="session")
def standin_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repo with this tree's `bench` package and the workload test double, committed."""
    repo = tmp_path_factory.mktemp("standin-repo")
    shutil.copytree(REPO / "bench", repo / "bench", ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "workflows" / "biggan").mkdir(parents=True)
    (repo / "workflows" / "__init__.py").write_text("")
    (repo / "workflows" / "biggan" / "__init__.py").write_text('"""Test double of the workload."""\n')
    shutil.copy(STANDIN, repo / "workflows" / "biggan" / "__main__.py")
    git = ["git", "-C", str(repo), "-c", "user.name=atlas-test", "-c", "user.email=atlas@test.invalid"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "stand-in workload"], check=True)
    return repo


def head(repo: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()


def in_queue(run_id: str) -> bool | None:
    """Whether Slurm still lists a job of the run (pending, running, completing, or the next
    segment of its chain); None when squeue cannot say."""
    cmd = ["squeue", "-h", "-n", f"atlas-{run_id}", "-o", "%i"]
    try:
        listed = subprocess.run(cmd, env=slurm_env(), capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return bool(listed.stdout.split()) if listed.returncode == 0 else None


def wait_finished(target: Any, run_id: str, timeout_s: float, poll_s: float = 1.0) -> Any:
    """The run's final RunStatus, read by bench's own wait loop (bench.targets.lifecycle.wait)
    once Slurm lists no job of the run: each round of that loop is one Ansible playbook
    (ansible/watch.yml, about 1 s of CPU), squeue costs milliseconds. Where the run is not
    finished by then, the loop's watch waits on the cluster side for its end."""
    from bench.targets.lifecycle import wait

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and in_queue(run_id):
        time.sleep(0.5)
    left = max(1.0, deadline - time.monotonic())
    return wait(target, [run_id], out=io.StringIO(), poll_s=poll_s, timeout_s=left)[run_id]
