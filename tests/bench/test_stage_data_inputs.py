"""Issue 31's stage-data inputs: each one raised ValueError or printed a secret before.

`--size -5` against a body without Content-Length, an ATLAS_SOURCE_AUTHORIZATION with a
line break, a URL with user:password@ and `stage_job(timeout_s=nan)` are each one clear
error; nothing reaches the server and no secret is printed. Real loopback servers
(tests/bench/test_stage_data_trust.py's)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bench.environments.load import CLUSTERS_DIR, Environment
from bench.errors import AtlasError
from bench.stage_data import StageError, check_data, data_spec, stage
from bench.targets import target_class
from bench.targets.kube_stage import stage_job
from tests.bench.test_stage_data_trust import REPO, SHA, left, servers  # noqa: F401 (servers: a fixture)


def test_a_negative_size_is_refused_before_anything_is_read(tmp_path: Path, servers) -> None:
    _, _, c = servers
    c.file("/endless", length=False)  # no Content-Length
    dest = tmp_path / "d" / "f.hdf5"
    with pytest.raises(StageError, match=r"--size -5: the file's size in bytes must be an integer more than 0"):
        stage(f"{c.url}/endless", dest, SHA, {"ATLAS_ALLOW_HTTP": "1"}, size=-5)
    assert not c.seen and left(dest) == []
    done = subprocess.run(
        [sys.executable, "-m", "bench.stage_data", "fetch", "--source", f"{c.url}/endless", "--allow-http"]
        + ["--dest", str(dest), "--sha256", SHA, "--size", "-5"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("stage-data: --size -5:")


@pytest.mark.parametrize("value", ["Bearer a\r\nX-Evil: 1", "Bearer a\nb", "Bearer \x00secret"])
def test_an_authorization_with_a_line_break_is_refused_and_not_printed(tmp_path: Path, servers, value: str) -> None:
    a, _, _ = servers
    a.file("/d.hdf5")
    dest = tmp_path / "out" / "d.hdf5"
    with pytest.raises(StageError) as caught:
        stage(f"{a.url}/d.hdf5", dest, SHA, {"ATLAS_SOURCE_AUTHORIZATION": value})
    message = str(caught.value)
    assert "ATLAS_SOURCE_AUTHORIZATION holds a line break or control character" in message
    assert "secret" not in message and "Evil" not in message and "\n" not in message
    assert not a.seen and left(dest) == []


def test_a_url_with_a_password_says_so_and_never_prints_it(tmp_path: Path, servers) -> None:
    a, _, _ = servers
    a.file("/d.hdf5")
    url = a.url.replace("https://", "https://alice:hunter2@") + "/d.hdf5"
    dest = tmp_path / "out" / "d.hdf5"
    with pytest.raises(StageError) as caught:
        stage(url, dest, SHA, {})
    message = str(caught.value)
    assert "hunter2" not in message and "alice" not in message
    assert "carries a user name or password (user:password@)" in message and "ATLAS_SOURCE_AUTHORIZATION" in message
    assert "https://***@127.0.0.1:" in message
    assert not a.seen and left(dest) == []


def test_env_yaml_data_source_with_a_password_is_a_validate_problem() -> None:
    problems = check_data(
        {"data": {"file": "f", "sha256": SHA, "source": "https://u:pw@host/f"}}, "env.yaml", on_volume=True
    )
    assert any("data.source" in p and "user:password@" in p for p in problems), problems
    assert not [p for p in problems if "pw" in p.replace("password", "")]


def _openshift_target():
    data = yaml.safe_load((CLUSTERS_DIR / "moc" / "env.yaml").read_text())
    return target_class("openshift")(Environment("moc", "openshift", CLUSTERS_DIR / "moc", data))


@pytest.mark.parametrize("timeout", [math.nan, math.inf, -5.0, 0, 1e12, True])
def test_stage_job_refuses_a_timeout_that_is_no_deadline(timeout: float) -> None:
    pytest.importorskip("kubernetes_validate")
    target = _openshift_target()
    spec = data_spec(
        target.env.settings,
        "moc",
        on_volume=target.data_on_volume,
        source="https://example.org/f.hdf5",
        file="f.hdf5",
        sha256=SHA,
    )
    with pytest.raises(AtlasError, match="stage-data timeout .*: give seconds, more than 0 and at most 604800"):
        stage_job(target, spec, "registry.example/atlas@sha256:" + "a" * 64, timeout)


def test_stage_job_rounds_a_fractional_timeout_up() -> None:
    pytest.importorskip("kubernetes_validate")
    target = _openshift_target()
    spec = data_spec(
        target.env.settings,
        "moc",
        on_volume=target.data_on_volume,
        source="https://example.org/f.hdf5",
        file="f.hdf5",
        sha256=SHA,
    )
    job = stage_job(target, spec, "registry.example/atlas@sha256:" + "a" * 64, 0.5)
    assert job["spec"]["activeDeadlineSeconds"] == 1
