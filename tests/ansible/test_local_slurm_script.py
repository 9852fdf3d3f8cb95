"""scripts/local-slurm.sh once the session's Slurm is up: idempotent, answers, refuses to
start a second cluster over the first one's ports."""

from __future__ import annotations

import os
import subprocess

from tests.ansible.local_slurm import SCRIPT, SLURM_CONF, local_slurm  # noqa: F401


def sh(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, timeout=180, env={**os.environ, **(env or {})}
    )


def test_up_is_idempotent_and_the_node_is_usable(local_slurm) -> None:
    again = sh("up")
    assert again.returncode == 0 and "already up" in again.stderr
    status = sh("status")
    assert status.returncode == 0 and status.stdout.startswith("up: node ")
    assert sh("env").stdout.strip() == f"export SLURM_CONF={SLURM_CONF}"
    conf = SLURM_CONF.read_text()
    for line in ("JobCompType=jobcomp/filetxt", "GresTypes=gpu", "ProctrackType=proctrack/linuxproc"):
        assert line in conf
    assert "DefMemPerCPU=" in conf and "Gres=gpu:1" in conf
    assert "File=/dev/null" in (SLURM_CONF.parent / "gres.conf").read_text()
    sinfo = subprocess.run(
        ["sinfo", "-h", "-N", "-o", "%T %c %G"],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "SLURM_CONF": str(SLURM_CONF)},
    )
    state, cpus, gres = sinfo.stdout.split()[:3]
    assert state in ("idle", "mixed", "allocated") and int(cpus) == os.cpu_count() and gres.startswith("gpu:1")


def test_a_second_checkout_gets_its_own_cluster_on_its_own_ports(local_slurm, tmp_path) -> None:
    other = {"ATLAS_SLURM_DIR": str(tmp_path / "other")}
    try:
        up = sh("up", env=other)
        assert up.returncode == 0, up.stderr
        conf = (tmp_path / "other" / "etc" / "slurm.conf").read_text()
        ports = {line.split("=")[0]: line.split("=")[1] for line in conf.splitlines() if "Port=" in line}
        assert ports["SlurmctldPort"] not in SLURM_CONF.read_text()
        assert sh("status", env=other).returncode == 0
    finally:
        assert sh("down", env=other).returncode == 0
    assert sh("status", env=other).returncode == 1
    assert sh("status").returncode == 0  # the session's cluster is untouched


def test_usage_is_explained() -> None:
    bad = sh("start")
    assert bad.returncode == 2 and "usage:" in bad.stderr
