"""A pod that ran but left no record: collection names the pod, its exit and its log tail.

Against the API double with its kubelet: the pod really runs (a process that prints and
writes nothing to the results volume), so the exit and the log come from what ran.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

pytest.importorskip("kubernetes")

from bench.environments.load import CLUSTERS_DIR, Environment  # noqa: E402
from bench.errors import AtlasError  # noqa: E402
from bench.targets import target_class  # noqa: E402
from bench.targets.base import JobSpec  # noqa: E402
from tests.doubles.apiserver.kubelet import Kubelet  # noqa: E402
from tests.doubles.kubectl_fixture import needs_kubectl, started  # noqa: E402
from tests.doubles.test_apiserver_kubelet import wait_for  # noqa: E402

pytestmark = needs_kubectl
ENV_DIR = CLUSTERS_DIR / "local-openshift"
RUN_ID = "20261127t011000-01234567-0abc"


def test_a_pod_that_left_no_record_is_named_with_its_exit_and_log(tmp_path: Path):
    for double, kubectl in started(tmp_path / "api"):
        kubelet = Kubelet(double, tmp_path / "node", source=CLUSTERS_DIR.parent)
        try:
            data = yaml.safe_load((ENV_DIR / "env.yaml").read_text())
            data.pop("queue")  # no Kueue here: the Job runs at once
            data.update(kubeconfig=str(tmp_path / "api" / "kubeconfig"), poll_interval_s=0.1)
            target = target_class("openshift")(Environment("local-openshift", "openshift", ENV_DIR, data))
            spec = JobSpec(run_id=RUN_ID, experiment="smoke", commit="0" * 40)
            manifest = target.job_manifest(spec, "atlas:dev", "")  # no digest: the kubelet's checkout
            train = manifest["spec"]["template"]["spec"]["containers"][0]
            train["command"] = ["python", "-c", "print('loading the data'); print('no GPU here, giving up')"]
            kubectl("create", "-f", "-", stdin=json.dumps(manifest))
            name = manifest["metadata"]["name"]
            wait_for(lambda jobs=double.jobs, n=name: jobs[n]["status"].get("conditions"), 60)
            with pytest.raises(AtlasError) as caught:
                target.fetch(RUN_ID, tmp_path / "into")
        finally:
            kubelet.stop()
    text = str(caught.value)
    assert f"run {RUN_ID} left no record on the results volume: its pod {name}-" in text, text
    assert "exited 0 (Completed)" in text and "last log lines: loading the data | no GPU here, giving up" in text
    assert "tar:" not in text.split(" (collection said:")[0]
    assert not (tmp_path / "into").exists()
