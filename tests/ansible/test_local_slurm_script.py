"""scripts/local-slurm.sh once the session's Slurm is up: idempotent, answers, refuses to
start a second cluster over the first one's ports."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
from pathlib import Path

import pytest

from tests.ansible.local_slurm import SCRIPT, SLURM_CONF, local_slurm  # noqa: F401

RESERVED = Path("/tmp/atlas-local-slurm-ports")  # scripts/local-slurm.sh: the machine-wide reservations


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


def listening_socket() -> socket.socket:
    """A listener on some controller port of the local-slurm range (6817 + 2k), held by this test."""
    for _ in range(50):
        sock = socket.socket()
        try:
            sock.bind(("0.0.0.0", 6817 + 2 * secrets.randbelow(400)))
            sock.listen()
            return sock
        except OSError:
            sock.close()
    pytest.skip("no port of the local-slurm range could be bound for the test")


def test_a_second_checkout_gets_its_own_cluster_on_its_own_ports(local_slurm, tmp_path) -> None:
    """The other folder's recorded ports are taken by another program: `up` moves to a free
    pair, records it in the folder and reserves it machine-wide (never the session's pair)."""
    other = {"ATLAS_SLURM_DIR": str(tmp_path / "other")}
    held = listening_socket()
    taken = held.getsockname()[1]
    (tmp_path / "other" / "etc").mkdir(parents=True)
    (tmp_path / "other" / "etc" / "ports").write_text(f"{taken}\n")
    try:
        up = sh("up", env=other)
        assert up.returncode == 0, up.stderr
        conf = (tmp_path / "other" / "etc" / "slurm.conf").read_text()
        ports = {line.split("=")[0]: line.split("=")[1] for line in conf.splitlines() if "Port=" in line}
        assert ports["SlurmctldPort"] not in SLURM_CONF.read_text()
        assert int(ports["SlurmctldPort"]) != taken and int(ports["SlurmdPort"]) == int(ports["SlurmctldPort"]) + 1
        assert (tmp_path / "other" / "etc" / "ports").read_text().split() == [ports["SlurmctldPort"]]
        assert f"{ports['SlurmctldPort']} {tmp_path / 'other'}" in RESERVED.read_text().splitlines()
        assert sh("status", env=other).returncode == 0
    finally:
        held.close()
        assert sh("down", env=other).returncode == 0
    assert sh("status", env=other).returncode == 1
    assert sh("status").returncode == 0  # the session's cluster is untouched


def test_usage_is_explained() -> None:
    bad = sh("start")
    assert bad.returncode == 2 and "usage:" in bad.stderr
