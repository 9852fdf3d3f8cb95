"""Issue 21 on Kubernetes and OpenShift: a run's timeline marks read from the API server's own
timestamps (Build, Job / PyTorchJob, pod conditions and statuses, Events) through the real
`kubernetes` client, against the API double driven by its clock. Every expected time is the
double's clock at the step the test made, never a constant."""

from __future__ import annotations

import json
import math
import socket
import time
import types
from pathlib import Path

import pytest
import yaml

pytest.importorskip("kubernetes")
pytest.importorskip("kubernetes_validate")

from bench.environments.load import Environment  # noqa: E402
from bench.errors import AtlasError  # noqa: E402
from bench.records.timeline import build_timeline, mark  # noqa: E402
from bench.targets import target_class  # noqa: E402
from bench.targets.base import JobSpec  # noqa: E402
from bench.targets.lifecycle import collect_run  # noqa: E402
from bench.targets.manifests import SCHEMA_FILE  # noqa: E402
from tests.bench.targets import test_openshift  # noqa: E402
from tests.bench.targets.test_kubernetes import COMMIT, RUN_ID, env_folder  # noqa: E402
from tests.doubles.apiserver import OpenShiftApiDouble  # noqa: E402

ORDER = ("accepted", "granted", "staged", "pull_start", "pulled", "container_started")
TWO_NODES = {"nodes": 2, "gpus_per_node": 4, "cpus_per_gpu": 4, "memory_gib_per_gpu": 24}


@pytest.fixture
def double(tmp_path: Path):
    (tmp_path / "pvc").mkdir()
    api = OpenShiftApiDouble("atlas-biggan", tmp_path / "pvc", SCHEMA_FILE).start()
    yield api
    api.stop()


def kube_target(tmp_path: Path, double: OpenShiftApiDouble, **settings):
    folder = env_folder(tmp_path / "clusters", **settings)
    data = yaml.safe_load((folder / "env.yaml").read_text())
    data["kubeconfig"] = str(double.write_kubeconfig(tmp_path / "kubeconfig"))
    return target_class("kubernetes")(Environment("k8s", "kubernetes", folder, data))


def api_mark(at: float) -> dict:
    return {"time": at, "source": "api-server", "resolution_s": 1.0}


def marks_of(target, double: OpenShiftApiDouble, run_id: str = RUN_ID) -> tuple[dict, list[str]]:
    """The marks, and the requests the call sent (method and path, query left out)."""
    before = len(double.requests)
    marks = target.timeline_marks(run_id, {})
    return marks, [f"{m} {p.split('?')[0]}" for m, p, _ in double.requests[before:]]


def in_order(marks: dict) -> None:
    """accepted < granted; the pull and the staging both after the grant, both before the start."""
    t = {name: marks[name]["time"] for name in ORDER}
    assert t["accepted"] < t["granted"] <= min(t["staged"], t["pull_start"]), marks
    assert t["pull_start"] <= t["pulled"] <= t["container_started"] and t["staged"] <= t["container_started"], marks


def test_a_job_run_has_queue_stage_pull_and_launch_from_the_api(tmp_path, double):
    target = kube_target(tmp_path, double)
    clock = double.clock
    accepted = clock.now()
    target.submit(JobSpec(RUN_ID, "smoke", COMMIT))
    (job,) = double.jobs
    clock.advance(7)
    pod = double.schedule_pod(job)["metadata"]["name"]
    granted = clock.now()
    # The run-folder init container runs the training image: on a cold node it pulls it.
    double.run_init_containers(pod, pull_s=20, run_s=3)
    staged = clock.now()
    double.image_present(pod)  # the main container finds it: a zero-length pull
    double.start_container(pod)
    clock.advance(50)
    double.finish_container(pod)

    marks, sent = marks_of(target, double)
    assert marks == {
        "accepted": api_mark(accepted),
        "granted": api_mark(granted),
        "stage_pull_start": api_mark(granted),
        "stage_pulled": api_mark(granted + 20),
        "staged": api_mark(staged),
        "pull_start": api_mark(granted),  # the init container's pull: the main one found the image
        "pulled": api_mark(granted + 20),
        "container_started": api_mark(staged),
        "container_finished": api_mark(staged + 50),
    }
    in_order(marks)
    # One list per resource kind: the Job, its pods, the pod's Events; nothing else.
    ns = "/namespaces/atlas-biggan"
    assert sent == [f"GET /apis/batch/v1{ns}/jobs", f"GET /api/v1{ns}/pods", f"GET /api/v1{ns}/events"]
    # The core cuts the phases from them (bench.records.timeline): queue, stage, pull from the
    # API's own timestamps; deliver and launch where they meet bench's and the job's clocks.
    job_marks = {"submitted": mark(accepted - 1, "bench-host", 0.001), "workload_start": mark(staged + 2, "job", 0.001)}
    phases = {p["phase"]: p for p in build_timeline({**marks, **job_marks})["phases"]}
    assert phases["deliver"]["seconds"] == 1 and phases["deliver"]["source"] == "bench-host → api-server"
    assert phases["queue"]["seconds"] == granted - accepted and phases["queue"]["source"] == "api-server"
    # the pull is counted once, in pull; staging starts when it ended
    assert phases["pull"]["seconds"] == 20 and phases["stage"]["seconds"] == staged - granted - 20
    assert phases["launch"]["seconds"] == 2 and phases["launch"]["source"] == "api-server → job"


def test_missing_pod_and_events_leave_their_marks_out(tmp_path, double):
    target = kube_target(tmp_path, double)
    accepted = double.clock.now()
    target.submit(JobSpec(RUN_ID, "smoke", COMMIT))
    assert marks_of(target, double)[0] == {"accepted": api_mark(accepted)}  # no pod yet: no 0s
    (job,) = double.jobs
    waiting = double.add_job_pod(job, "Pending", unschedulable="0/3 nodes are available: Insufficient nvidia.com/gpu.")
    assert marks_of(target, double)[0] == {"accepted": api_mark(accepted)}  # not scheduled: no `granted`
    double.pods.pop(waiting["metadata"]["name"])
    double.clock.advance(3)
    pod = double.schedule_pod(job)["metadata"]["name"]
    double.prepare_pod(pod, pull_s=9)
    double.start_container(pod)
    double.store["events"].clear()  # the API server drops Events after its --event-ttl (1 h)
    marks = marks_of(target, double)[0]
    assert {"accepted", "granted", "staged", "container_started"} <= set(marks)
    assert not {"pull_start", "pulled", "stage_pull_start", "stage_pulled"} & set(marks)
    assert target.timeline_marks("20261122t030000-01234567-none", {}) == {}  # no Job of that run


def test_an_unreachable_api_is_one_line_naming_the_env_and_the_fix(tmp_path, double):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        double.server.server_address = ("127.0.0.1", s.getsockname()[1])  # the kubeconfig's port is closed
    with pytest.raises(AtlasError) as info:
        kube_target(tmp_path, double).timeline_marks(RUN_ID, {})
    message = str(info.value)
    assert "\n" not in message and message.startswith("k8s: cannot reach the Kubernetes API while listing Jobs")
    assert message.endswith("check the server in your kubeconfig and your network/VPN")


def test_a_pytorchjob_run_reads_its_master_pod(tmp_path, double):
    target = kube_target(tmp_path, double, shape=TWO_NODES)
    clock = double.clock
    accepted = clock.now()
    target.submit(JobSpec(RUN_ID, "smoke", COMMIT))
    (name,) = double.pytorchjobs
    clock.advance(2)
    worker = double.add_pytorchjob_pod(name, "Worker", 0, "Pending")["metadata"]["name"]
    double.bind_pod(double.pods[worker])  # the worker got its node first: not the run's mark
    clock.advance(4)
    master = double.add_pytorchjob_pod(name, "Master", 0, "Pending")["metadata"]["name"]
    double.bind_pod(double.pods[master])
    granted = clock.now()
    double.run_init_containers(master, pull_s=0, run_s=2)
    staged = clock.now()
    clock.advance(1)
    double.pull_image(master, 5)  # imagePullPolicy Always: the main container pulls again
    pulled = clock.now()
    double.start_container(master)

    marks, sent = marks_of(target, double)
    assert {k: marks[k] for k in ORDER} == {
        "accepted": api_mark(accepted),
        "granted": api_mark(granted),
        "staged": api_mark(staged),
        "pull_start": api_mark(staged + 1),
        "pulled": api_mark(pulled),
        "container_started": api_mark(pulled),
    }
    in_order(marks)
    assert "container_finished" not in marks  # still running
    assert len([s for s in sent if s.endswith("/pytorchjobs")]) == 1 and len(sent) == 3


def test_an_openshift_run_starts_its_delivery_at_the_build(tmp_path, double):
    double.add_buildconfig("atlas-biggan")
    clock = double.clock
    build_created = clock.now()
    build = {
        "apiVersion": "build.openshift.io/v1",
        "kind": "Build",
        "metadata": {
            "name": "atlas-biggan-1",
            "namespace": "atlas-biggan",
            "uid": double.new_uid(),
            "creationTimestamp": clock.stamp(),
            "labels": {"buildconfig": "atlas-biggan"},
        },
        "spec": {
            "revision": {"type": "Git", "git": {"commit": COMMIT}},
            "strategy": {"type": "Docker", "dockerStrategy": {}},
            "triggeredBy": [{"message": "GitHub WebHook"}],
        },
        "status": {"phase": "New"},
    }
    double.validate(build)
    double.record("builds", build, "ADDED")  # the push's webhook started it
    clock.advance(6)
    double.set_build_phase("atlas-biggan-1", "Running")
    clock.advance(95)
    stages = (("FetchInputs", 2), ("PullImages", 8), ("Build", 70), ("PushImage", 12.5))  # ms only in the last
    double.set_build_phase("atlas-biggan-1", "Complete", stages=stages)
    build_done = clock.now()
    clock.advance(2)
    target = test_openshift.make_target(tmp_path, double)
    target.submit(test_openshift.job_spec())
    (job,) = double.jobs
    double.run_job_pod(job, queue_s=3, pull_s=12, stage_s=1, run_s=30)

    marks, sent = marks_of(target, double, test_openshift.RUN_ID)
    assert marks["build_created"] == api_mark(build_created)
    assert marks["build_started"] == api_mark(build_created + 6)
    assert marks["image_pushed"] == api_mark(build_created + 6 + sum(seconds for _, seconds in stages))
    assert marks["build_completed"] == api_mark(build_done)
    assert marks["accepted"] == api_mark(build_done + 2)
    assert marks["granted"] == api_mark(build_done + 5)
    assert marks["stage_pulled"]["time"] - marks["stage_pull_start"]["time"] == 12
    assert marks["staged"] == api_mark(build_done + 5 + 12 + 1)
    in_order(marks)
    assert marks["build_started"]["time"] < marks["image_pushed"]["time"] <= marks["build_completed"]["time"]
    assert marks["build_completed"]["time"] <= marks["accepted"]["time"]
    assert len([s for s in sent if "/builds/" in s]) == 1 and len(sent) == 4


def test_a_collected_openshift_run_shows_deliver_queue_pull_and_launch_from_the_api(tmp_path, double, monkeypatch):
    """Submit (the Build takes 90 s), run, collect: run.json's timeline has the phases that
    happen around training from the API server's own timestamps, and they add up. The
    double's clock runs ahead of this machine's (it skips the waits), so collection reads it."""
    clock = double.clock
    double.add_buildconfig("atlas-biggan")

    def slow_build(build: dict) -> None:
        clock.advance(90)
        double.complete_build(build)

    double.on_build = slow_build
    target = test_openshift.make_target(tmp_path, double)
    # the double's clock stands still while this machine's runs on: bring it up to now, so
    # that bench's submit time (this machine's clock) and the API's stamps start together
    clock.advance(math.ceil(time.time() - clock.now()))
    target.submit(test_openshift.job_spec())
    (job,) = double.jobs
    double.run_job_pod(job, queue_s=4, pull_s=15, stage_s=2, run_s=40)
    started = marks_of(target, double, test_openshift.RUN_ID)[0]["container_started"]["time"]
    run_dir = double.volume / test_openshift.RUN_ID
    run_dir.mkdir(parents=True, exist_ok=True)
    record = {
        "schema_version": 1,
        "run_id": test_openshift.RUN_ID,
        "start_time": started + 0.5,
        "end_time": started + 39,
    }
    container = double.jobs[job]["spec"]["template"]["spec"]["containers"][0]
    submit_time = float(next(e["value"] for e in container["env"] if e["name"] == "ATLAS_SUBMIT_TIME"))
    scheduler = {"kind": "openshift", "submit_time": submit_time}  # as the recorder writes ATLAS_SUBMIT_TIME
    (run_dir / "run.json").write_text(json.dumps({**record, "scheduler": scheduler}))
    events = [
        {"event": "run_start", "time": started + 3.0, "iteration": 0},
        {"event": "warmup", "time": started + 8.0, "warmup_s": 5.0, "setup_s": 2.0},
        {"event": "train", "time": started + 38.0, "iteration": 10, "images_per_s": 5.0},
    ]
    (run_dir / "train.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))

    monkeypatch.setattr("bench.records.place.time", types.SimpleNamespace(time=lambda: clock.now() + 5))
    placed = collect_run(target, test_openshift.RUN_ID, tmp_path / "results").path
    timeline = json.loads((placed / "run.json").read_text())["timeline"]
    by = {p["phase"]: p for p in timeline["phases"]}
    build = timeline["marks"]
    assert by["deliver"]["source"] == "bench-host → api-server"
    assert by["deliver"]["seconds"] >= 90 - 1  # the Build the submit waited for is delivery (API: whole seconds)
    # the Build happened inside deliver (its whole-second stamps: within 1 s of bench's clock)
    assert by["deliver"]["start"] - 1 < build["build_created"]["time"] < build["build_completed"]["time"]
    assert build["build_completed"]["time"] <= by["deliver"]["end"]
    assert by["queue"]["source"] == "api-server" and by["queue"]["seconds"] == 4
    assert by["pull"]["source"] == "api-server" and by["pull"]["seconds"] == 15
    assert by["stage"]["seconds"] == 2
    assert by["launch"]["source"] == "api-server → job" and by["launch"]["seconds"] == 1.0  # started + 1 = workload
    assert by["warmup"]["seconds"] == 7.0 and by["train"]["seconds"] == 30.0 and by["finish"]["seconds"] == 1.0
    total = timeline["marks"]["collected"]["time"] - timeline["marks"]["submitted"]["time"]
    assert abs(sum(p["seconds"] for p in timeline["phases"]) - total) <= 1.0  # one clock resolution
