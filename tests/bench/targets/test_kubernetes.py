"""The plain `kubernetes` kind (image from a registry, any cluster), through the real
`kubernetes` client against the loopback API double that validates every body."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
import yaml

pytest.importorskip("kubernetes")
pytest.importorskip("kubernetes_validate")

from bench.environments.load import CLUSTERS_DIR, Environment  # noqa: E402
from bench.errors import AtlasError, ConfigError  # noqa: E402
from bench.targets import known_kinds, target_class  # noqa: E402
from bench.targets.base import JobSpec, RunState  # noqa: E402
from bench.targets.lifecycle import collect_run  # noqa: E402
from bench.targets.manifests import SCHEMA_FILE  # noqa: E402
from tests.doubles.apiserver import OpenShiftApiDouble  # noqa: E402

COMMIT = "0123456789abcdef0123456789abcdef01234567"
RUN_ID = "20261122t030000-01234567-k8s1"
IMAGE = "registry.example.org/atlas/biggan:{commit}"


def env_folder(root: Path, **settings) -> Path:
    """A `kind: kubernetes` environment: env.yaml and the Job template, nothing else."""
    folder = root / "k8s"
    folder.mkdir(parents=True)
    shutil.copy(CLUSTERS_DIR / "moc" / "job.yaml", folder / "job.yaml")
    data = {
        "kind": "kubernetes",
        "description": "any Kubernetes cluster, image from a registry",
        "namespace": "atlas-biggan",
        "image": IMAGE,
        "job_template": "job.yaml",
        "results_pvc": "atlas-results",
        "results_mount": "/results",
        "poll_interval_s": 0.01,
        **settings,
    }
    (folder / "env.yaml").write_text(yaml.safe_dump(data))
    return folder


@pytest.fixture
def double(tmp_path: Path):
    volume = tmp_path / "pvc"
    volume.mkdir()
    api = OpenShiftApiDouble("atlas-biggan", volume, SCHEMA_FILE).start()
    yield api
    api.stop()


def make_target(tmp_path: Path, double: OpenShiftApiDouble, token: str | None = None):
    folder = env_folder(tmp_path / "clusters")
    data = yaml.safe_load((folder / "env.yaml").read_text())
    data["kubeconfig"] = str(double.write_kubeconfig(tmp_path / f"kubeconfig-{token or 'ok'}", token=token))
    return target_class("kubernetes")(Environment("k8s", "kubernetes", folder, data))


def test_the_kind_is_registered_and_a_folder_validates(tmp_path: Path, capsys):
    from bench.cli import main

    assert "kubernetes" in known_kinds()  # the module alone makes the kind: no registry edit
    env_folder(tmp_path)
    assert main(["validate", "--clusters", str(tmp_path), "--no-experiments", "k8s"]) == 0, capsys.readouterr().out


def test_missing_image_is_named(tmp_path: Path):
    folder = env_folder(tmp_path, image="")
    with pytest.raises(ConfigError, match="'image' must be a non-empty string"):
        target_class("kubernetes")(
            Environment("k8s", "kubernetes", folder, yaml.safe_load((folder / "env.yaml").read_text()))
        )


def test_submit_runs_the_registry_image_of_the_commit_and_builds_nothing(tmp_path, double):
    target = make_target(tmp_path, double)
    status = target.submit(JobSpec(RUN_ID, "smoke", COMMIT, ("train.max_iters=2",)))
    assert status.state is RunState.PENDING and status.commit == COMMIT
    (job,) = [body for method, path, body in double.requests if method == "POST" and path.endswith("/jobs")]
    train = job["spec"]["template"]["spec"]["containers"][0]
    assert train["image"] == f"registry.example.org/atlas/biggan:{COMMIT}"
    assert train["command"][-2:] == ["--set", "train.max_iters=2"] and "args" not in train  # launch.py renders it
    assert job["metadata"]["name"].startswith("atlas-") and job["metadata"]["labels"]["atlas/run-id"] == RUN_ID
    env = {e["name"]: e.get("value") for e in train["env"]}
    assert env["ATLAS_ENV"] == "k8s" and env["ATLAS_RUN_DIR"] == f"/results/{RUN_ID}"
    assert not [p for _, p, _ in double.requests if "build.openshift.io" in p]  # no OpenShift API used


def test_status_collect_and_scheduler_times(tmp_path, double):
    target = make_target(tmp_path, double)
    target.submit(JobSpec(RUN_ID, "smoke", COMMIT))
    job = next(iter(double.jobs))
    double.add_job_pod(job, "Running", started=time.time() + 5)
    assert target.status(RUN_ID).state is RunState.RUNNING
    double.finish_job(job, "Complete")
    assert [r.state for r in target.list_runs(COMMIT)] == [RunState.COMPLETED]
    run_dir = double.volume / RUN_ID
    run_dir.mkdir()
    (run_dir / "run.json").write_text(json.dumps({"schema_version": 1, "run_id": RUN_ID}))
    dest = collect_run(target, RUN_ID, tmp_path / "results").path
    sched = json.loads((dest / "run.json").read_text())["scheduler"]
    assert sched["kind"] == "kubernetes" and sched["job_id"] == job and sched["queue_wait_s"] >= 0


def test_bad_token_names_the_kubernetes_api(tmp_path, double):
    target = make_target(tmp_path, double, token="wrong")
    with pytest.raises(AtlasError, match=r"the Kubernetes API refused the credentials.*kubectl config current-context"):
        target.submit(JobSpec(RUN_ID, "smoke", COMMIT))
