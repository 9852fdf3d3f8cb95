"""Checkpoint digest files (`.sha256` sidecars) never condemn an intact bundle (issue 24).

The sidecar is written as readable as its bundle (group-readable: on OpenShift another uid
of group 0 resumes the run), and a sidecar that names no digest (empty after a crash,
unreadable) is treated as missing: the bundle's zip CRCs decide.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch

from tests.workflows.biggan.test_checkpoint import _bundle, _flip_tensor_byte
from workflows.biggan import checkpoint as ckpt
from workflows.biggan.errors import WorkloadConfigError


def test_the_sidecar_is_as_readable_as_its_bundle(tmp_path: Path) -> None:
    old = os.umask(0o002)  # group-readable and writable, as an OpenShift pod's files are
    try:
        bundle = ckpt.save(tmp_path, _bundle(1), keep=2)
    finally:
        os.umask(old)
    sidecar = ckpt.digest_path(bundle)
    assert stat.S_IMODE(sidecar.stat().st_mode) == stat.S_IMODE(bundle.stat().st_mode) == 0o664


@pytest.mark.skipif(os.geteuid() != 0, reason="reads as another uid (needs root to switch)")
def test_another_uid_of_the_group_resumes_from_an_intact_checkpoint() -> None:
    """The bundle and its sidecar as a pod of uid 1000680000, group 0, writes them; another
    uid of group 0 loads the newest bundle (not: 'digest file unreadable')."""
    tmp_path = Path(tempfile.mkdtemp(prefix="atlas-ckpt-uid-"))  # pytest's tmp folders are 0700: not for another uid
    try:
        other_uid_loads(tmp_path)
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)


def other_uid_loads(tmp_path: Path) -> None:
    os.chmod(tmp_path, 0o777)
    old = os.umask(0o002)
    try:
        ckpt.save(tmp_path, _bundle(1), keep=2)
    finally:
        os.umask(old)
    for path in [tmp_path / "checkpoints", *(tmp_path / "checkpoints").iterdir()]:
        os.chown(path, 1000680000, 0)
    code = (  # imports first (the interpreter may live where that uid cannot read), then the uid
        "import os, sys, pathlib, zipfile, torch; from workflows.biggan import checkpoint as c;"
        "os.setgid(0); os.setgroups([0]); os.setuid(1000690000);"
        "b, p = c.load_latest(pathlib.Path(sys.argv[1])); print(p.name, b['iteration'])"
    )
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ckpt-00000001.pt", "1"] and "warning" not in done.stderr


@pytest.mark.parametrize("content", [b"", b"\n", b"  \n"])
def test_an_empty_sidecar_is_treated_as_missing(tmp_path: Path, content: bytes) -> None:
    only = ckpt.save(tmp_path, _bundle(1), keep=2)
    ckpt.digest_path(only).write_bytes(content)
    bundle, path = ckpt.load_latest(tmp_path)  # the zip CRC decides: intact
    assert path == only and bundle["iteration"] == 1
    _flip_tensor_byte(only)
    with pytest.raises(WorkloadConfigError, match="zip member .* fails its CRC"):
        ckpt.load_file(only)  # and a damaged bundle is still caught
    assert torch.load(only, weights_only=True)["iteration"] == 1  # torch alone would not notice


def test_a_sidecar_naming_another_digest_still_condemns_the_bundle(tmp_path: Path) -> None:
    """The control: a real digest that differs still refuses the bundle."""
    only = ckpt.save(tmp_path, _bundle(1), keep=2)
    ckpt.digest_path(only).write_text("0" * 64 + "  ckpt-00000001.pt\n")
    with pytest.raises(WorkloadConfigError, match="its SHA-256 differs"):
        ckpt.load_file(only)
