"""Kueue on the API double: two queued Jobs, quota for one; the second waits for the first.

The Jobs are the openshift target's own manifests (env.yaml `queue:`), sent through the
real client; the double's kubelet really runs their pods; the queue wait is read back by
the target's timeline code (Workload created -> Admitted).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

pytest.importorskip("kubernetes")

from bench.environments.load import CLUSTERS_DIR, Environment  # noqa: E402
from bench.targets import target_class  # noqa: E402
from bench.targets.base import JobSpec  # noqa: E402
from bench.targets.kueue import QUEUE_LABEL, kueue_marks  # noqa: E402
from tests.doubles.apiserver.kubelet import Kubelet  # noqa: E402
from tests.doubles.apiserver.kueue import Kueue  # noqa: E402
from tests.doubles.apiserver.tables import parse_time  # noqa: E402
from tests.doubles.kubectl_fixture import needs_kubectl, started  # noqa: E402
from tests.doubles.test_apiserver_kubelet import SCRIPT, git, wait_for  # noqa: E402

pytestmark = needs_kubectl
ENV_DIR = CLUSTERS_DIR / "local-openshift"


@pytest.fixture
def app(tmp_path: Path) -> Path:
    repo = tmp_path / "app"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "job.py").write_text(SCRIPT)
    git(repo, "add", "job.py")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "job")
    return repo


@pytest.mark.slow
def test_two_runs_with_quota_for_one_the_second_waits_the_first_run_time(tmp_path: Path, app: Path):
    for double, kubectl in started(tmp_path / "api"):
        kubelet = Kubelet(double, tmp_path / "node", source=app)
        kueue = Kueue(double, {"cpu-cq": {"cpu": "1", "memory": "4Gi"}}, {"cpu-localqueue": "cpu-cq"})
        try:
            data = yaml.safe_load((ENV_DIR / "env.yaml").read_text())
            data.update(kubeconfig=str(tmp_path / "api" / "kubeconfig"), poll_interval_s=0.1)
            target = target_class("openshift")(Environment("local-openshift", "openshift", ENV_DIR, data))
            names = []
            for i in range(2):
                spec = JobSpec(run_id=f"20261127t010000-01234567-000{i}", experiment="smoke", commit="0" * 40)
                manifest = target.job_manifest(spec, "app:latest", "")  # no digest: the kubelet's checkout
                assert manifest["metadata"]["labels"][QUEUE_LABEL] == "cpu-localqueue"
                assert manifest["spec"]["suspend"] is True
                train = manifest["spec"]["template"]["spec"]["containers"][0]
                train["command"] = ["python", "job.py", train["volumeMounts"][0]["mountPath"], "3", "0"]
                train["env"] += [{"name": "DATA", "value": "/data"}]
                (tmp_path / "node" / "claims" / "atlas-data").mkdir(parents=True, exist_ok=True)
                (tmp_path / "node" / "claims" / "atlas-data" / "in.txt").write_text("x")
                kubectl("create", "-f", "-", stdin=json.dumps(manifest))
                names.append(manifest["metadata"]["name"])
                time.sleep(1.1)  # one second apart: FIFO order by creationTimestamp
            for name in names:
                wait_for(lambda name=name, jobs=double.jobs: jobs[name]["status"].get("conditions"), 120)
            first, second = (kueue_marks(target, n) for n in names)
            assert {m["source"] for m in (*first.values(), *second.values())} == {"kueue"}
            done = [j["status"]["conditions"][-1] for j in (double.jobs[n] for n in names)]
            assert [c["type"] for c in done] == ["Complete", "Complete"]
            first_end = parse_time(double.jobs[names[0]]["status"]["completionTime"])
            first_run = first_end - first["granted"]["time"]  # admitted -> finished: the first's run time
            assert first["granted"]["time"] - first["accepted"]["time"] <= 1  # quota free: admitted at once
            assert first_run >= 3
            # the second is admitted when the first gives its quota back: it queued for the first's run
            # time (less the second it was created after the first)
            wait = second["granted"]["time"] - second["accepted"]["time"]
            offset = second["accepted"]["time"] - first["accepted"]["time"]
            assert abs(wait - (first_run - offset)) <= 1.5, (wait, first_run, offset)
            wls = double.store["workloads"].values()
            # a Workload is marked Finished once Kueue sees its Job complete: a moment after the Job
            assert wait_for(
                lambda wls=wls: all(any(c["type"] == "Finished" for c in w["status"]["conditions"]) for w in wls), 30
            )
            pending = [c for w in wls for c in w["status"]["conditions"] if c["type"] == "QuotaReserved"]
            assert all(c["status"] == "True" for c in pending)
        finally:
            kueue.stop()
            kubelet.stop()
        assert kubelet.errors == []


def test_a_job_over_quota_waits_suspended_and_status_says_where(tmp_path: Path, app: Path):
    for double, kubectl in started(tmp_path / "api"):
        kueue = Kueue(double, {"cpu-cq": {"cpu": "500m", "memory": "4Gi"}}, {"cpu-localqueue": "cpu-cq"})
        try:
            data = yaml.safe_load((ENV_DIR / "env.yaml").read_text())
            data.update(kubeconfig=str(tmp_path / "api" / "kubeconfig"), poll_interval_s=0.1)
            target = target_class("openshift")(Environment("local-openshift", "openshift", ENV_DIR, data))
            run_id = "20261127t012000-01234567-0000"
            manifest = target.job_manifest(JobSpec(run_id=run_id, experiment="smoke", commit="0" * 40), "a:b", "")
            kubectl("create", "-f", "-", stdin=json.dumps(manifest))  # asks 1 CPU of a 0.5 CPU quota
            wl = wait_for(lambda store=double.store: next(iter(store["workloads"].values()), None))
            reserved = wait_for(lambda wl=wl: [c for c in wl["status"]["conditions"] if c["type"] == "QuotaReserved"])
            assert reserved[0]["status"] == "False" and "insufficient unused quota for cpu" in reserved[0]["message"]
            status = target.status(run_id)
            assert status.detail == "waiting in Kueue queue cpu-localqueue (suspended until admitted)"
            assert double.jobs[manifest["metadata"]["name"]]["spec"]["suspend"] is True and not double.pods
            assert kueue_marks(target, manifest["metadata"]["name"]).keys() == {"accepted"}  # not admitted: no granted
        finally:
            kueue.stop()
