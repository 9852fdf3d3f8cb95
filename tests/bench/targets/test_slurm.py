"""The slurm target against a real single-node Slurm, through the real Ansible playbooks.

Mechanics (complete, fail, cancel, checkpoint and resume, GPU request, hostile values)
run a test double of the workload from a throw-away git repo (tests/ansible/local_slurm.py)
so each job takes seconds; test_slurm_smoke.py runs the real workload end to end.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import re
import secrets
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from bench.cli import main
from bench.environments.load import Environment, load_env
from bench.errors import AtlasError, ConfigError
from bench.records.timeline import phase_seconds, timeline_problems
from bench.targets import target_for
from bench.targets.base import JobSpec, RunState, new_run_id
from bench.targets.lifecycle import Submission, collect_run, run_and_collect
from bench.targets.slurm import LONG_POLL_S, SlurmTarget, extravars_yaml
from tests.ansible.local_slurm import (  # noqa: F401
    REPO,
    RUNS,
    head,
    local_slurm,
    slurm_env,
    standin_repo,
    wait_finished,
)

pytestmark = [pytest.mark.slurm]


def make_target(tmp_path: Path, repo: Path, name: str = "local-slurm", **slurm: object) -> SlurmTarget:
    base = load_env("local-slurm")
    settings = copy.deepcopy(base.settings)
    settings["slurm"].update(slurm)
    target = SlurmTarget(Environment(name=name, kind="slurm", folder=base.folder, settings=settings))
    target.repo = repo
    target.state_dir = tmp_path / "ledger"
    return target


def submit(target: SlurmTarget, repo: Path, *overrides: str) -> JobSpec:
    sha = head(repo)
    job = JobSpec(run_id=new_run_id(sha), experiment="smoke", commit=sha, overrides=tuple(overrides))
    status = target.submit(job)
    assert status.state is RunState.PENDING and status.scheduler_job_id and status.scheduler_job_id.isdigit()
    return job


def train_events(run_dir: Path) -> list[dict]:
    path = run_dir / "train.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def wait_for(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(0.5)


def assert_resumed_timeline(dest: Path, how: str, tmp_path: Path) -> str:
    """A resumed run's collected record: each attempt's phases in order with `how` between
    them, no negative phase, the queue phases adding up to Slurm's queue wait, `bench check`
    clean, and the report drawing its attempts. Returns the report's timeline rows and its
    line of the attempts' phases."""
    record = json.loads((dest / "run.json").read_text())
    timeline, sched = record["timeline"], record["scheduler"]
    phases = timeline["phases"]
    assert len(timeline["attempts"]) == sched["attempts"] > 1, timeline
    # none below zero beyond its clocks' resolution (a process start is read in 10 ms ticks)
    assert all(p["seconds"] >= -p["resolution_s"] for p in phases if p["seconds"] is not None), phases
    assert timeline_problems(timeline) == [], timeline_problems(timeline)
    assert [p["phase"] for p in phases].count(how) == sched["attempts"] - 1, phases
    seconds = phase_seconds(timeline)
    assert seconds["queue"] == pytest.approx(sched["queue_wait_total_s"], abs=0.002), (phases, sched)
    trained = sum(p["seconds"] for p in phases if p["phase"] == "train")
    assert seconds["train"] == pytest.approx(trained) and all(
        p["end"] - p["start"] == pytest.approx(p["seconds"]) for p in phases if p["phase"] == "train"
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        checked = main(["check", str(dest.parent.parent)])
    assert checked == 0, out.getvalue()
    assert main(["report", "--results", str(dest.parent.parent), "--out", str(tmp_path / "reports")]) == 0
    page = next((tmp_path / "reports").glob("*/README.md")).read_text()
    assert "timeline.png" in page and f"({sched['attempts']} attempts)**, in order:" in page, page
    lines = page.splitlines()
    shown = [line for line in lines if line.startswith("| local-slurm | ") or "attempts)**, in order:" in line]
    return "\n".join(shown)


def test_target_registry_builds_the_slurm_target_for_local_slurm() -> None:
    target = target_for("local-slurm")
    assert isinstance(target, SlurmTarget)
    assert target.inventory == REPO / "clusters" / "local-slurm" / "inventory.yml"


def test_extravars_mark_templatable_strings_unsafe() -> None:
    text = extravars_yaml(
        {"a": "{{ lookup('pipe', 'id') }}", "b": ["x; {% y %}", "12:00:00", ""], "c": {"d": 1, "e": True}}
    )
    assert text.count("!unsafe") == 2 and "d: 1" in text and "e: true" in text
    assert "'12:00:00'" in text and "''" in text  # plain strings stay strings


def test_completed_run_is_collected_with_scheduler_times(local_slurm, standin_repo, tmp_path) -> None:
    # Also a GPU request: the local node has one fake GPU (gres.conf File=/dev/null).
    target = make_target(tmp_path, standin_repo, gpus_per_node=1)
    job = submit(target, standin_repo, "standin.iters=5")
    assert "#SBATCH --gres=gpu:1\n" in (RUNS / job.run_id / "job.sbatch").read_text()
    final = wait_finished(target, job.run_id, 120, 1)
    assert final.state is RunState.COMPLETED, final.detail
    assert final.commit == head(standin_repo)
    assert [r.run_id for r in target.list_runs(commit=head(standin_repo)[:8])] == [job.run_id]

    # as `bench run` collects: the finished status it has is trusted, so no status playbook runs
    playbooks: list[str] = []
    run_events = target._run_events
    target._run_events = lambda playbook, *a, **kw: playbooks.append(playbook) or run_events(playbook, *a, **kw)
    dest = collect_run(target, job.run_id, tmp_path / "results", finished=final).path
    assert playbooks == ["collect.yml"], playbooks
    names = {p.name for p in dest.iterdir()}
    assert {"run.json", "train.jsonl", "job.sbatch", "slurm-jobs.tsv", f"slurm-{final.scheduler_job_id}.out"} <= names
    assert any(n.startswith("samples-") and n.endswith(".csv") for n in names)
    assert "checkpoint.json" not in names  # only the record comes back
    record = json.loads((dest / "run.json").read_text())
    sched = record["scheduler"]
    assert sched["kind"] == "slurm" and sched["job_id"] == final.scheduler_job_id
    assert sched["submit_time"] <= sched["start_time"] <= sched["end_time"]
    assert sched["queue_wait_s"] >= 0 and sched["queue_wait_s"] == round(sched["start_time"] - sched["submit_time"], 3)
    # The test Slurm stores no accounting (accounting_storage/none): Slurm's figures are absent, with the reason.
    acct = sched["accounting"]
    assert acct["gpu_util_mean_pct"] is None and acct["energy_j"] is None
    assert set(acct["absent"]) == {"gpu_util", "gpu_mem", "energy"}
    assert all("keeps no job accounting" in reason for reason in acct["absent"].values()), acct["absent"]
    assert record["git"]["sha"] == head(standin_repo) and record["git"]["dirty"] is False
    assert record["run_id"] == job.run_id and record["env"] == "local-slurm"
    assert train_events(dest)[-1]["status"] == "success"
    start = [e for e in train_events(dest) if e["event"] == "run_start"][0]
    assert start["gpus"]["SLURM_JOB_GPUS"] == "0" and start["gpus"]["CUDA_VISIBLE_DEVICES"] == "0"
    # Collecting twice changes nothing.
    before = (dest / "run.json").read_bytes()
    collect_run(target, job.run_id, dest.parent.parent)
    assert (dest / "run.json").read_bytes() == before


def test_bench_run_waits_with_a_few_playbooks_and_none_after_the_end(
    local_slurm, standin_repo, tmp_path, monkeypatch
) -> None:
    """`bench run`'s own path (a Submission, run_and_collect) for a job of a few seconds: one
    submit, then watch.yml runs that each wait on the login node until the state changes
    (pending, running, completing, completed: a handful, never one per poll), then collect.
    No status playbook runs once a watch has reported the run finished. Counted, not timed."""
    target = make_target(tmp_path, standin_repo)
    ran: list[tuple[str, dict]] = []
    run_events = SlurmTarget._run_events

    def counted(self, playbook, extravars, timeout_s=600):
        stats, events = run_events(self, playbook, extravars, timeout_s)
        ran.append((playbook, stats))
        return stats, events

    monkeypatch.setattr(SlurmTarget, "_run_events", counted)
    submission = Submission(target, "smoke", head(standin_repo), ("standin.iters=80",))  # ~8 s of training
    out = io.StringIO()
    started = time.monotonic()
    (done,) = run_and_collect(submission, 1, tmp_path / "results", out=out, timeout_s=300)
    waited = time.monotonic() - started
    names = [name for name, _ in ran]
    assert names[0] == "submit.yml" and names[-1] == "collect.yml" and set(names[1:-1]) == {"watch.yml"}, names
    # the first watch answers at once (nothing seen yet), then one per change (at most 3 more),
    # and one more per LONG_POLL_S without a change, however slow a busy machine makes the job;
    # polled every ~2 s (the loop before watch.yml) this job took 6 or more status playbooks
    assert 2 <= len(names) - 2 <= 4 + int(waited // LONG_POLL_S), (names, waited, out.getvalue())
    saw_end = [i for i, (name, stats) in enumerate(ran) if name == "watch.yml" and stats["runs"][0]["finished"]]
    assert saw_end == [len(ran) - 2], names  # only the last watch saw it finished; collect came right after
    path = done.path
    record = json.loads((path / "run.json").read_text())
    assert record["scheduler"]["state"] == "COMPLETED" and record["exit"]["code"] == 0
    assert done.run is not None and done.run.meta == record  # the record as collect read it, once
    lines = out.getvalue().splitlines()
    assert lines[-2:] == [f"local-slurm/{path.name}: completed (exit code 0)", f"collected: {path}"], lines


def test_failed_run_is_reported_with_its_log_tail(local_slurm, standin_repo, tmp_path) -> None:
    target = make_target(tmp_path, standin_repo)
    job = submit(target, standin_repo, "standin.iters=2", "standin.exit=3")
    final = wait_finished(target, job.run_id, 120, 1)
    assert final.state is RunState.FAILED
    assert "exit code 3" in final.detail and "standin: failed at iteration 2" in final.detail
    assert (RUNS / job.run_id).is_dir()  # the tests' own work folder, removed after the session
    with pytest.MonkeyPatch.context() as mp:  # what a user's `bench collect --env local-slurm` lists
        mp.delenv("ATLAS_SLURM_WORK")
        assert job.run_id not in [r.run_id for r in make_target(tmp_path, standin_repo).list_runs()]
    dest = collect_run(target, job.run_id, tmp_path / "failed").path
    assert json.loads((dest / "run.json").read_text())["scheduler"]["exit_code"] == 3


def test_cancelled_run_does_not_resubmit_itself(local_slurm, standin_repo, tmp_path) -> None:
    target = make_target(tmp_path, standin_repo)
    job = submit(target, standin_repo, "standin.iters=3000")
    run_dir = RUNS / job.run_id
    wait_for(lambda: any(e["event"] == "run_start" for e in train_events(run_dir)), 90, "the job to start")
    with pytest.raises(AtlasError, match="collect it once it has finished"):
        collect_run(target, job.run_id, tmp_path / "early")
    with pytest.raises(AtlasError, match="already has Slurm job .* RUNNING"):
        target.submit(job)  # a second job in the same run directory
    target.cancel(job.run_id)
    final = wait_finished(target, job.run_id, 90, 1)
    assert final.state is RunState.CANCELLED, final.detail
    assert final.extra["job_ids"] == final.scheduler_job_id  # no dependent job was chained
    assert (run_dir / "CANCELLED").exists()


def running_job_id(run_id: str, env: dict[str, str]) -> str | None:
    out = subprocess.run(
        ["squeue", "-h", "-t", "R", "-n", f"atlas-{run_id}", "-o", "%i"],
        capture_output=True, text=True, timeout=30, env={**os.environ, **env},
    ).stdout.split()  # fmt: skip
    return out[0] if len(out) == 1 else None


def trained_in_segment(run_dir: Path, segment: int) -> bool:
    """Segment `segment` (0-based) has started and moved past the iteration it started at."""
    events = train_events(run_dir)
    starts = [i for i, e in enumerate(events) if e["event"] == "run_start"]
    if len(starts) != segment + 1:
        return False
    begun = events[starts[-1]]["iteration"]
    return any(e["event"] == "heartbeat" and e["iteration"] > begun for e in events[starts[-1] :])


def test_time_limit_warning_signal_checkpoints_and_the_chain_completes(local_slurm, standin_repo, tmp_path) -> None:
    """The time-limit warning (`--signal=B:USR1@45`) is sent by this test, the way Slurm sends
    it (to the batch shell), once each segment has made progress: when Slurm's own timer
    fires depends on the machine's load (a segment could get it before training at all),
    so the test picks the moment and the job's real time limit is never reached."""
    target = make_target(tmp_path, standin_repo, time_limit="00:15:00", signal="B:USR1@45", max_segments=8)
    job = submit(target, standin_repo, "standin.iters=200")
    assert "#SBATCH --signal=B:USR1@45" in (RUNS / job.run_id / "job.sbatch").read_text()
    for segment in range(2):
        wait_for(lambda s=segment: trained_in_segment(RUNS / job.run_id, s), 240, f"segment {segment + 1} to train")
        job_id = running_job_id(job.run_id, local_slurm)
        assert job_id, "the segment that logged progress is not running"
        warn = subprocess.run(
            ["scancel", "--batch", "--signal=USR1", job_id], capture_output=True, text=True, timeout=30,
            env={**os.environ, **local_slurm},
        )  # fmt: skip
        assert warn.returncode == 0, warn.stderr
    final = wait_finished(target, job.run_id, 420, 2)
    logs = "".join(p.read_text() for p in sorted((RUNS / job.run_id).glob("slurm-*.out")))
    assert final.state is RunState.COMPLETED, f"{final.detail}\n{logs}"
    stops = [e for e in train_events(RUNS / job.run_id) if e["event"] == "run_stop"]
    assert [s["status"] for s in stops] == ["preempted", "preempted", "success"], logs
    assert stops[-1]["iteration"] == 200
    job_ids = final.extra["job_ids"].split(",")
    assert len(job_ids) == 3 and job_ids[0] == final.scheduler_job_id
    starts = [e for e in train_events(RUNS / job.run_id) if e["event"] == "run_start"]
    for stop, resumed in zip(stops, starts[1:]):  # each segment resumes where the last one stopped
        assert resumed["resumed_from"] == "checkpoint.json" and resumed["iteration"] == stop["iteration"] > 0
    dest = collect_run(target, job.run_id, tmp_path / "resumed").path
    sched = json.loads((dest / "run.json").read_text())["scheduler"]
    assert sched["job_ids"] == job_ids and sched["segments"] == len(job_ids) and sched["job_id"] == job_ids[0]
    assert sched["end_time"] >= sched["start_time"] and sched["queue_wait_total_s"] >= 0
    assert all((dest / f"slurm-{j}.out").exists() for j in job_ids)
    print(assert_resumed_timeline(dest, "resubmit", tmp_path))  # the closing note's figure (pytest -s)


def test_hostile_env_name_is_refused_and_overrides_stay_literal_text(local_slurm, standin_repo, tmp_path) -> None:
    tag = secrets.token_hex(4)
    canaries = [Path(f"/tmp/atlas-pwned-{tag}-{i}") for i in range(6)]
    with pytest.raises(ConfigError, match="is not a valid name"):
        make_target(tmp_path, standin_repo, name=f"local-slurm; touch {canaries[0]} $(touch {canaries[1]})")
    env_name = "local-slurm"
    overrides = (
        "standin.iters=1",
        f"a=x; touch {canaries[2]}",
        f"b=$(touch {canaries[3]})`touch {canaries[4]}`",
        f"c={{{{ lookup('pipe', 'touch {canaries[5]}') }}}}",
        'd=it\'s "quoted"\nsecond line\\',
    )
    target = make_target(tmp_path, standin_repo, name=env_name)
    job = submit(target, standin_repo, *overrides)
    final = wait_finished(target, job.run_id, 120, 1)
    assert final.state is RunState.COMPLETED, final.detail
    assert [c for c in canaries if c.exists()] == []
    run_dir = RUNS / job.run_id
    script = (run_dir / "job.sbatch").read_text()
    assert f"touch {canaries[2]}" in script and f"touch {canaries[5]}" in script  # present, as text
    start = [e for e in train_events(run_dir) if e["event"] == "run_start"][0]
    assert start["overrides"] == list(overrides)  # arrived byte for byte
    assert json.loads((run_dir / "run.json").read_text())["env"] == env_name


def test_sbatch_refusal_names_the_task_and_the_scheduler_message(local_slurm, standin_repo, tmp_path) -> None:
    target = make_target(tmp_path, standin_repo, partition="nosuchpartition")
    with pytest.raises(AtlasError) as err:
        submit(target, standin_repo)
    text = str(err.value)
    assert "sbatch refused the job" in text and "invalid partition" in text.lower()
    assert "What to check" in text


def test_bad_settings_and_commits_are_clear_errors(local_slurm, standin_repo, tmp_path) -> None:
    with pytest.raises(AtlasError, match="slurm.time_limit: must be an sbatch time"):  # refused before any sbatch
        make_target(tmp_path, standin_repo, time_limit="1; reboot")
    target = make_target(tmp_path, standin_repo)
    with pytest.raises(AtlasError, match="is not in"):
        target.submit(JobSpec(run_id="r1", experiment="smoke", commit="no-such-branch"))
    assert target.status("never-submitted").state is RunState.UNKNOWN


def test_unreachable_controller_is_reported_not_hung(local_slurm, tmp_path) -> None:
    base = load_env("local-slurm")
    settings = copy.deepcopy(base.settings)
    target = SlurmTarget(Environment(name="local-slurm", kind="slurm", folder=base.folder, settings=settings))
    target.state_dir = tmp_path
    # Point every Slurm command at a config whose controller does not exist.
    bad = tmp_path / "slurm.conf"
    conf = REPO / ".slurm" / "etc" / "slurm.conf"
    if not conf.exists():
        pytest.skip("no local slurm.conf yet (scripts/local-slurm.sh up writes it)")
    bad.write_text(
        re.sub(r"SlurmctldPort=\d+", "SlurmctldPort=1", conf.read_text()).replace(  # nobody listens on 1
            "SlurmctldTimeout=30", "SlurmctldTimeout=5"
        )
        + "MessageTimeout=2\n"
    )
    run_id = f"unreachable-{secrets.token_hex(3)}"
    run_dir = RUNS / run_id
    run_dir.mkdir(parents=True)
    try:
        (run_dir / "slurm-jobs.tsv").write_text("999999\t0\n")
        target._run = _with_slurm_conf(target._run, str(bad))  # type: ignore[method-assign]
        with pytest.raises(AtlasError, match="squeue failed"):
            target.status(run_id)
    finally:
        shutil.rmtree(run_dir)


def _with_slurm_conf(run, conf: str):
    def wrapped(playbook, extravars, timeout_s=600):
        return run(playbook, {**extravars, "atlas_slurm_env": {"SLURM_CONF": conf}}, timeout_s=180)

    return wrapped


def test_ansible_gets_a_user_name_when_user_is_unset(monkeypatch):
    """`bench status` with $USER unset: Ansible still finds a user name."""
    from bench.targets.slurm import user_env

    monkeypatch.delenv("USER", raising=False)
    monkeypatch.delenv("LOGNAME", raising=False)
    env = user_env()
    assert env["USER"] and env["USER"] == env["LOGNAME"]
    monkeypatch.setenv("USER", "alice")
    assert user_env() == {"USER": "alice", "LOGNAME": "alice"}


def _scontrol(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["scontrol", *args], env=slurm_env(), capture_output=True, text=True, timeout=30)


def test_a_plain_scancel_is_a_cancel_never_a_resubmission(local_slurm, standin_repo, tmp_path) -> None:
    """scancel without the time-limit warning: the batch script marks the run cancelled,
    submits nothing, and the record says cancelled (it said preempted, and resubmitted)."""
    target = make_target(tmp_path, standin_repo)
    job = submit(target, standin_repo, "standin.iters=3000")
    run_dir = RUNS / job.run_id
    wait_for(lambda: any(e["event"] == "run_start" for e in train_events(run_dir)), 90, "the job to start")
    job_id = target.status(job.run_id).scheduler_job_id
    subprocess.run(["scancel", job_id], env=slurm_env(), check=True, timeout=30)
    final = wait_finished(target, job.run_id, 90, 1)
    time.sleep(3)  # a resubmission, if any, would be listed by now
    final = target.status(job.run_id)
    log = (run_dir / f"slurm-{job_id}.out").read_text()
    assert final.state is RunState.CANCELLED, final.detail + log
    assert "exit code 0" not in final.detail and "cancelled" in final.detail, final.detail  # not the shell's 0
    assert final.extra["job_ids"] == job_id, log  # no second job
    assert "scancel" in (run_dir / "CANCELLED").read_text() and "not resubmitting" in log
    dest = collect_run(target, job.run_id, tmp_path / "results").path
    assert json.loads((dest / "run.json").read_text())["exit"]["status"] == "cancelled"


def test_a_slurm_requeue_resumes_the_same_job_with_both_logs_and_real_waits(
    local_slurm, standin_repo, tmp_path
) -> None:
    """`scontrol requeue`: the same job runs again and resumes from its checkpoint; no second
    submission, the first attempt's log kept (append mode, one header per attempt), and the
    queue wait is the sum of both attempts' real waits (from the submit, or the end of the
    attempt before, to the start). The test shortens Slurm's requeue hold (BeginTime +2 min)
    to a few seconds with `scontrol update`."""
    target = make_target(tmp_path, standin_repo)
    job = submit(target, standin_repo, "standin.iters=120")
    run_dir = RUNS / job.run_id
    wait_for(lambda: any(e["event"] == "run_start" for e in train_events(run_dir)), 90, "training to start")
    time.sleep(2)
    job_id = target.status(job.run_id).scheduler_job_id
    assert _scontrol("requeue", job_id).returncode == 0
    wait_for(lambda: len([e for e in train_events(run_dir) if e["event"] == "run_stop"]) >= 1, 60, "the checkpoint")

    def pending() -> bool:
        cmd = ["squeue", "-h", "-j", job_id, "-o", "%T"]
        state = subprocess.run(cmd, env=slurm_env(), capture_output=True, text=True, timeout=30)
        return state.stdout.strip() == "PENDING"

    wait_for(pending, 60, "the requeued job to be pending")
    assert _scontrol("update", f"JobId={job_id}", "StartTime=now+4").returncode == 0
    final = wait_finished(target, job.run_id, 180, 1)
    log = (run_dir / f"slurm-{job_id}.out").read_text()
    assert final.state is RunState.COMPLETED, final.detail + log
    assert final.extra["job_ids"] == job_id, log  # Slurm's requeue only: no second submission
    assert f"job {job_id} attempt 0 " in log and f"job {job_id} attempt 1 " in log and "requeued by Slurm" in log
    assert not (run_dir / "CANCELLED").exists()
    stops = [e for e in train_events(run_dir) if e["event"] == "run_stop"]
    assert [s["status"] for s in stops] == ["preempted", "success"] and stops[-1]["iteration"] == 120
    dest = collect_run(target, job.run_id, tmp_path / "results").path
    record = json.loads((dest / "run.json").read_text())
    sched = record["scheduler"]
    assert sched["attempts"] == 2 and sched["requeues"] == 1 and sched["queue_wait_resolution_s"] == 1.0
    rows = [ln.split("\t") for ln in (dest / "slurm-attempts.tsv").read_text().splitlines()]
    ends = dict(ln.rsplit("\t", 1) for ln in (dest / "slurm-attempt-ends.tsv").read_text().splitlines())
    assert len(rows) == 2 and f"{job_id}\t1" in ends  # the first attempt's end may be lost to KillWait
    # the requeued attempt waits from its requeue, or from the first attempt's end if that came later
    first_end = round(float(ends.get(f"{job_id}\t0", 0.0)), 3)
    waits = [float(rows[0][3]) - float(rows[0][2]), float(rows[1][3]) - max(float(rows[1][2]), first_end)]
    assert sched["queue_wait_total_s"] == round(sum(max(0.0, w) for w in waits), 3) and sched["queue_wait_total_s"] < 60
    assert waits[1] >= 2  # the hold (a few seconds) is in the second attempt's queue
    assert len(record["previous_attempts"]) == 1 and record["exit"]["status"] == "success"
    print(assert_resumed_timeline(dest, "requeue", tmp_path))  # the closing note's figure (pytest -s)
