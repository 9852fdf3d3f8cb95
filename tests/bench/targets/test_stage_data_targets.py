"""`bench stage-data` per kind: a staging Job on OpenShift (against the API double), the
sha256 check of a pre-staged file on Slurm (the real playbook through ansible-runner)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml

from bench.environments.load import CLUSTERS_DIR, Environment
from bench.errors import AtlasError
from bench.stage_data import data_spec
from bench.targets import target_class
from bench.targets.manifests import SCHEMA_FILE

SHA = hashlib.sha256(b"imagenet128").hexdigest()


class _S3:
    """A loopback stand-in for an S3-compatible endpoint: serves the object, notes signed paths."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                signed = self.headers.get("Authorization", "").startswith("AWS4-HMAC-SHA256 Credential=AKID/")
                outer.paths.append(self.path)
                body = b"imagenet128" if signed else b"AccessDenied"
                self.send_response(200 if signed else 403)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"


@pytest.fixture
def double(tmp_path: Path):
    pytest.importorskip("kubernetes_validate")
    from tests.doubles.apiserver import OpenShiftApiDouble

    (tmp_path / "pvc").mkdir()
    api = OpenShiftApiDouble("atlas-biggan", tmp_path / "pvc", SCHEMA_FILE).start()
    yield api
    api.stop()


def _kubelet(double, volumes: dict[str, Path], environ: dict[str, str] | None = None) -> None:
    """Act as the cluster: once the staging Job exists, run its container's command for real
    (claims mapped to local folders), keep its output as the pod log, and finish the Job."""
    import os
    import subprocess
    import sys
    import threading
    import time

    def run() -> None:
        while not double.jobs:
            time.sleep(0.01)
        (name,) = double.jobs
        spec = double.jobs[name]["spec"]["template"]["spec"]
        (container,) = spec["containers"]
        claims = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in spec["volumes"] if "emptyDir" not in v}
        assert container["securityContext"]["readOnlyRootFilesystem"] is True  # writes go to volumes only
        argv = [sys.executable if a == "python" else a for a in container["command"]]
        for mount in container["volumeMounts"]:
            if mount["name"] not in claims:
                continue  # an emptyDir (/tmp): the test's own temporary folder serves
            local = str(volumes[claims[mount["name"]]])
            argv = [a.replace(mount["mountPath"], local, 1) if a.startswith(mount["mountPath"]) else a for a in argv]
        env = dict(os.environ, **(environ or {}))  # envFrom: the Secret's keys, then the container's env
        env.update({e["name"]: e["value"] for e in container.get("env", [])})
        proc = subprocess.run(argv, capture_output=True, text=True, env=env)
        ok = proc.returncode == 0
        pod = double.add_job_pod(name, "Succeeded" if ok else "Failed", terminated="Completed" if ok else "Error",
                                 exit_code=proc.returncode)  # fmt: skip
        double.pod_logs[pod["metadata"]["name"]] = proc.stdout + proc.stderr
        double.finish_job(name, "Complete" if ok else "Failed", "" if ok else "BackoffLimitExceeded")

    threading.Thread(target=run, daemon=True).start()


def test_openshift_stages_with_a_job_from_s3(tmp_path, double):
    from tests.bench.targets.test_openshift import make_target

    target = make_target(tmp_path, double)
    server = _S3()
    spec = data_spec(
        target.env.settings, "moc", on_volume=target.data_on_volume, sha256=SHA, source="s3://atlas-data/imagenet128.hdf5",
        s3_endpoint=server.url, credentials_secret="atlas-data-source", allow_http=True,
    )  # fmt: skip
    _kubelet(
        double,
        {"atlas-data": tmp_path / "data"},
        {"AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "s", "ATLAS_S3_ENDPOINT": server.url},
    )  # the Secret's keys
    try:
        line = target.stage_data(spec, timeout_s=30)
        assert line.startswith("staged: ") and line.endswith(f"imagenet128.hdf5 (sha256 {SHA[:12]})")
    finally:
        server.httpd.shutdown()
    assert (tmp_path / "data" / "imagenet128.hdf5").read_bytes() == b"imagenet128"
    assert server.paths == ["/atlas-data/imagenet128.hdf5"]
    (job,) = double.jobs.values()
    assert job["metadata"]["name"].startswith("atlas-stage-data-")  # generateName
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["command"] == [
        "python", "-m", "bench.stage_data", "fetch", "--source", "s3://atlas-data/imagenet128.hdf5",
        "--dest", "/data/imagenet128.hdf5", "--sha256", SHA, "--root", "/data",
    ]  # fmt: skip
    assert container["envFrom"] == [{"secretRef": {"name": "atlas-data-source"}}]
    assert {"name": "ATLAS_S3_ENDPOINT", "value": server.url} in container["env"]
    assert {"name": "ATLAS_ALLOW_HTTP", "value": "1"} in container["env"]  # a loopback http endpoint: allowed
    assert job["spec"]["template"]["spec"]["volumes"] == [
        {"name": "data", "persistentVolumeClaim": {"claimName": "atlas-data"}},
        {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}},  # the root filesystem is read-only
    ]


def test_openshift_from_another_pvc_and_a_wrong_checksum(tmp_path, double):
    from tests.bench.targets.test_openshift import make_target

    target = make_target(tmp_path, double)
    spec = data_spec(
        {"data": {"file": "imagenet128.hdf5", "sha256": SHA, "source": "pvc:imagenet-raw/i128.hdf5"}},
        "moc",
        on_volume=target.data_on_volume,
    )
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / "i128.hdf5").write_bytes(b"imagenet64")  # not the file the sha256 names
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "imagenet128.hdf5").write_bytes(b"old, verified")
    _kubelet(double, {"atlas-data": tmp_path / "data", "imagenet-raw": tmp_path / "raw"})
    with pytest.raises(AtlasError, match=r"failed: checksum mismatch .* the existing file is untouched") as info:
        target.stage_data(spec, timeout_s=30)
    assert "\n" not in str(info.value)
    assert (tmp_path / "data" / "imagenet128.hdf5").read_bytes() == b"old, verified"
    # The right file: staged; and staging again is a no-op.
    (tmp_path / "raw" / "i128.hdf5").write_bytes(b"imagenet128")
    for expected in ("staged:", "already staged:"):
        double.jobs.clear()
        _kubelet(double, {"atlas-data": tmp_path / "data", "imagenet-raw": tmp_path / "raw"})
        assert target.stage_data(spec, timeout_s=30).startswith(expected)
    assert (tmp_path / "data" / "imagenet128.hdf5").read_bytes() == b"imagenet128"
    (job,) = double.jobs.values()
    volumes = job["spec"]["template"]["spec"]["volumes"]
    assert volumes[2] == {"name": "source", "persistentVolumeClaim": {"claimName": "imagenet-raw", "readOnly": True}}
    with pytest.raises(AtlasError, match="data.source is not set"):
        target.stage_data(
            data_spec({"data": {"file": "f", "sha256": SHA}}, "moc", on_volume=target.data_on_volume), timeout_s=1
        )


@pytest.mark.slurm
def test_slurm_checks_the_prestaged_file(tmp_path):
    pytest.importorskip("ansible_runner")
    folder = CLUSTERS_DIR / "local-slurm"
    data = yaml.safe_load((folder / "env.yaml").read_text())
    data["data_path"] = str(tmp_path)
    target = target_class("slurm")(Environment("local-slurm", "slurm", folder, data))
    spec = data_spec(
        {"data": {"file": "imagenet128.hdf5", "sha256": SHA}}, "local-slurm", on_volume=target.data_on_volume
    )
    with pytest.raises(AtlasError, match="does not exist on the cluster"):
        target.stage_data(spec, timeout_s=120)
    (tmp_path / "imagenet128.hdf5").write_bytes(b"imagenet128")
    assert target.stage_data(spec, timeout_s=120).startswith("already staged:")
    (tmp_path / "imagenet128.hdf5").write_bytes(b"imagenet64")
    with pytest.raises(AtlasError, match="it is not the file env.yaml names"):
        target.stage_data(spec, timeout_s=120)
    assert (tmp_path / "imagenet128.hdf5").read_bytes() == b"imagenet64"  # a check changes nothing
