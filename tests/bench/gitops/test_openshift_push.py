"""OpenShift end to end on one machine: a push's webhook builds the commit, the pod trains, the run is collected.

A bare repository's post-receive hook (`bench hooks install`) plays GitHub's part: it POSTs
the push event to local-openshift's BuildConfig webhook on the API double. The double's
kubelet exports the pushed commit (the Build), `bench run` finds that Build (no
instantiate), Kueue admits the queued Job, its pod trains the smoke preset for real as a local process, and the
record is collected with a timeline from the double's clocks.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("kubernetes")

from bench.environments.load import CLUSTERS_DIR  # noqa: E402
from bench.records.timeline import PHASES  # noqa: E402
from tests.bench.gitops.test_hooks import SHORT, _project_snapshot, bare_repo, bench_hooks  # noqa: E402
from tests.doubles.apiserver.kubelet import Kubelet  # noqa: E402
from tests.doubles.apiserver.kueue import Kueue  # noqa: E402
from tests.doubles.kubectl_fixture import needs_kubectl, started  # noqa: E402
from tests.gitrepo import ENV, git  # noqa: E402

pytestmark = [needs_kubectl, pytest.mark.slow]


def test_a_push_builds_by_webhook_and_the_openshift_run_is_collected(tmp_path: Path):
    bare = bare_repo(tmp_path)
    args = ["install", str(bare), "--foreground", "--env", "local-openshift", "--experiment", "smoke"]
    for item in SHORT:
        args += ["--set", item]
    assert bench_hooks(*args).returncode == 0
    work = tmp_path / "dev"
    git(tmp_path, "clone", "--quiet", str(bare), str(work))
    _project_snapshot(work)
    git(work, "add", "--all")
    git(work, "commit", "--quiet", "-m", "the project")
    sha = git(work, "rev-parse", "HEAD").strip()

    for double, kubectl in started(tmp_path / "api"):
        kubelet = Kubelet(double, tmp_path / "node", source=bare)
        kueue = Kueue(double, {"cpu-cq": {"cpu": "1", "memory": "4Gi"}}, {"cpu-localqueue": "cpu-cq"})
        try:
            kubectl("apply", "-k", str(CLUSTERS_DIR / "local-openshift"))
            env = dict(ENV, ATLAS_API_DOUBLE=str(tmp_path / "api"))
            push = subprocess.run(
                ["git", "push", "origin", "HEAD:main"], cwd=work, env=env, capture_output=True, text=True, timeout=900
            )
            out = push.stdout + push.stderr
            assert push.returncode == 0, out
            # a wrong secret, a ping, another branch: nothing built by them (test_apiserver_webhooks.py)
            builds = [b for b in double.builds.values() if b["spec"]["revision"].get("git", {}).get("commit") == sha]
            (build,) = builds
            assert build["spec"]["triggeredBy"][0]["message"] == "GitHub WebHook", build["spec"]
            assert f"webhook started build {build['metadata']['name']} of {sha[:12]}" in out, out
            assert not [p for m, p, _ in double.requests if m == "POST" and p.endswith("/instantiate")]
            assert build["status"]["phase"] == "Complete"
            assert len(double.jobs) == 1, out
            (job,) = double.jobs.values()
            assert job["metadata"]["annotations"]["atlas/build"] == build["metadata"]["name"]
            assert job["status"]["conditions"][-1]["type"] == "Complete"
            (workload,) = double.store["workloads"].values()  # Kueue admitted the Job
            assert workload["spec"]["queueName"] == "cpu-localqueue"
            assert [c["type"] for c in workload["status"]["conditions"]] == ["QuotaReserved", "Admitted", "Finished"]
        finally:
            kueue.stop()
            kubelet.stop()
        assert kubelet.errors == []

    kept = git(bare, "ls-tree", "-r", "--name-only", "results").split()
    run_json = next(f for f in kept if f.startswith("runs/local-openshift/") and f.endswith("/run.json"))
    record = json.loads(git(bare, "show", f"results:{run_json}"))
    assert record["git"]["sha"] == sha
    timeline = record["timeline"]
    marks, phases = timeline["marks"], {p["phase"]: p for p in timeline["phases"]}
    assert list(phases) == list(PHASES)
    assert all(phases[p]["seconds"] is not None for p in PHASES), phases
    # deliver runs from the push (ATLAS_PUSHED_AT) through the Build to the Job's creation
    assert phases["deliver"]["start"] <= marks["build_created"]["time"] + 1
    assert marks["build_completed"]["time"] <= marks["accepted"]["time"] + 1
    total = sum(phases[p]["seconds"] for p in PHASES)
    assert abs(total - (marks["collected"]["time"] - phases["deliver"]["start"])) < 2.5
    assert phases["queue"]["source"] == "kueue" and marks["granted"]["source"] == "kueue"
    assert phases["train"]["seconds"] > 0 and phases["warmup"]["seconds"] > 0
