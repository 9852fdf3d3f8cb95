#!/usr/bin/python
"""Ansible module: the Slurm jobs of one Atlas run, read from the cluster.

A run may span several jobs: the first one `sbatch` made, then one per resubmission
after a checkpoint (`--dependency=afterany`). Each is listed in `<run_dir>/slurm-jobs.tsv`
(job id, submit time). This module asks `squeue` about the jobs still known to the
controller and `sacct -c` (job completion log) about finished ones, and folds them into
the run's state and the run record's `scheduler` section.

Action `watch` waits on the cluster: it asks again every `poll_s` seconds (one `squeue`
and one `sacct -c` per run, cheap C commands on the login node) until one run's
`progress` (its state, detail and job ids: what bench's progress line shows) differs
from what the caller last saw, or a run has finished, or `wait_s` has passed. So one
playbook run (one SSH session) covers many seconds of a job's life, and a finished run
is seen within `poll_s` of Slurm reporting it.
"""

from __future__ import annotations

DOCUMENTATION = r"""
module: atlas_slurm_jobs
short_description: Query or cancel the Slurm job chain of one Atlas run
options:
  run_dir: {type: path, required: true, description: "the run directory (action list: the folder of run directories)"}
  action: {type: str, default: query, choices: [query, cancel, list, watch]}
  runs: {type: dict, default: {}, description: "action watch: run id -> the progress last seen (empty: none)"}
  wait_s: {type: float, default: 0, description: "action watch: the longest wait for a change, in seconds"}
  poll_s: {type: float, default: 1, description: "action watch: seconds between two queries"}
  commit: {type: str, default: "", description: "action list: only runs of commits starting with this"}
  env_name: {type: str, default: "", description: "action list: only runs submitted for this environment"}
  slurm_env: {type: dict, default: {}, description: environment for Slurm commands (SLURM_CONF)}
  log_lines: {type: int, default: 30, description: lines of the last job's log to return}
  accounting_fields: {type: str, default: "", description: "once finished, sacct of these fields as accounting"}
  timeout_s: {type: int, default: 60, description: "seconds per squeue/sacct/scancel (ATLAS_SLURM_TIMEOUT_S)"}
"""

import json
import os
import re
import time

from ansible.module_utils.basic import AnsibleModule

JOBS_FILE = "slurm-jobs.tsv"
ATTEMPTS_FILE = "slurm-attempts.tsv"  # the batch script: job id, restart count, submit, start
ENDS_FILE = "slurm-attempt-ends.tsv"  # the batch script: job id, restart count, end
QUEUE_WAIT_RESOLUTION_S = 1.0  # Slurm's SubmitTime and `date +%s` are whole seconds
CANCEL_MARK = "CANCELLED"
JOB_ID = re.compile(r"^[0-9]+$")
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")  # as ansible/roles/atlas/tasks/validate_run_id.yml
FINISHED = (
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "BOOT_FAIL",
    "DEADLINE",
    "PREEMPTED",
    "SPECIAL_EXIT",
    "REVOKED",
)


def _num(text):
    text = (text or "").strip()
    return float(text) if re.match(r"^[0-9]+(\.[0-9]+)?$", text) else None


def run_slurm(module, argv, env):
    """`argv` (a Slurm command) bounded by coreutils' `timeout`: a hung controller or
    accounting database fails the task with one line naming the timeout and the fix."""
    limit = module.params["timeout_s"]
    rc, out, err = module.run_command(["timeout", "-k", "5", str(limit)] + argv, environ_update=env)
    if rc in (124, 137):
        module.fail_json(
            msg="%s did not answer in %d s (Slurm controller or accounting database slow or down: "
            "`scontrol ping`); collect again later, or raise ATLAS_SLURM_TIMEOUT_S" % (argv[0], limit)
        )
    return rc, out, err


def read_jobs(run_dir):
    """[(job_id, submit_time)] in submission order (job ids grow)."""
    path = os.path.join(run_dir, JOBS_FILE)
    jobs = {}
    if os.path.exists(path):
        with open(path) as fh:
            for line in fh:
                parts = line.strip().split("\t")
                if parts and JOB_ID.match(parts[0]):
                    jobs[parts[0]] = _num(parts[1]) if len(parts) > 1 else None
    return sorted(jobs.items(), key=lambda kv: int(kv[0]))


def read_attempts(run_dir):
    """[(job_id, restart, submit_time, start_time)]: one per start of a job, a Slurm requeue
    of the same job included (its submit time is the requeue's)."""
    attempts = []
    try:
        with open(os.path.join(run_dir, ATTEMPTS_FILE)) as fh:
            for line in fh:
                parts = line.rstrip("\n").split("\t")
                if len(parts) == 4 and JOB_ID.match(parts[0]) and parts[1].isdigit():
                    attempts.append((parts[0], int(parts[1]), _num(parts[2]), _num(parts[3])))
    except OSError:
        pass
    return attempts


def read_ends(run_dir):
    """{(job_id, restart): end_time}: when each attempt's batch script ended."""
    ends = {}
    try:
        with open(os.path.join(run_dir, ENDS_FILE)) as fh:
            for line in fh:
                parts = line.rstrip("\n").split("\t")
                if len(parts) == 3 and JOB_ID.match(parts[0]) and parts[1].isdigit():
                    end = _num(parts[2])
                    ends[(parts[0], int(parts[1]))] = round(end, 3) if end is not None else None
    except OSError:
        pass
    return ends


def attempt_times(attempts, ends):
    """One entry per attempt, in order: job id, restart, Slurm's submit (a requeue's is the
    requeue's time), `ready` (when it began to wait for resources), start and end.

    A requeued job and a resubmitted one (afterany) are both submitted while the attempt
    before them still runs (it checkpoints and exits): they wait for resources only from
    that attempt's end, so `ready` is the later of the submit and the previous end (and
    never after the start). Queue wait = start - ready, summed over the attempts."""
    out, previous_end = [], None
    for job_id, restart, submit, start in attempts:
        ready = submit
        if ready is not None and previous_end is not None:
            ready = max(ready, previous_end)
        if ready is not None and start is not None:
            ready = min(ready, start)
        end = ends.get((job_id, restart))
        out.append(
            {
                "job_id": job_id,
                "restart": restart,
                "submit_time": submit,
                "ready_time": ready,
                "start_time": start,
                "end_time": end,
            }
        )
        previous_end = end
    return out


def read_source(run_dir):
    """source.json that submit wrote: commit, env, how the code got there."""
    try:
        with open(os.path.join(run_dir, "source.json")) as fh:
            data = json.load(fh)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def progress(result):
    """What a caller's progress line shows of a run, as one string: the last job's state,
    the detail, the job ids. `watch` returns when it differs from the caller's."""
    return "%s|%s|%s" % (result["state"], result.get("detail") or "", ",".join(j["job_id"] for j in result["jobs"]))


def log_tail(run_dir, job_id, log_lines):
    """The last `log_lines` lines of the job's log (`slurm-<job id>.out`), or ""."""
    log = os.path.join(run_dir, "slurm-%s.out" % job_id)
    if not os.path.exists(log):
        return ""
    with open(log, "rb") as fh:
        return b"".join(fh.readlines()[-log_lines:]).decode("utf-8", "replace")


def query(module, run_dir, env, log_lines):
    ids = read_jobs(run_dir)
    result = {
        "jobs": [],
        "state": "UNKNOWN",
        "finished": False,
        "job_id": None,
        "log_tail": "",
        "cancel_requested": os.path.exists(os.path.join(run_dir, CANCEL_MARK)),
        "commit": read_source(run_dir).get("commit"),
    }
    if not ids:
        result["detail"] = "no Slurm job recorded in %s/%s" % (run_dir, JOBS_FILE)
        result["progress"] = progress(result)
        return result
    fmt_env = dict(env, SLURM_TIME_FORMAT="%s")
    csv = ",".join(i for i, _ in ids)
    rc, out, err = run_slurm(module, ["squeue", "-h", "--states=all", "-j", csv, "-o", "%i|%T|%r|%S|%e"], fmt_env)
    queued = {}
    if rc == 0:
        for line in out.splitlines():
            f = line.split("|")
            if len(f) == 5:
                queued[f[0].strip()] = f
    elif "Invalid job id" not in err:
        module.fail_json(msg="squeue failed: %s -- is the Slurm controller up (`scontrol ping`)?" % err.strip())
    done = {}
    fields = "JobID,State,ExitCode,Eligible,Start,End,NodeList"
    rc, out, err = run_slurm(module, ["sacct", "-c", "-n", "-P", "-j", csv, "-o", fields], fmt_env)
    if rc == 0:
        for line in out.splitlines():
            f = line.split("|")
            if len(f) == 7 and JOB_ID.match(f[0].strip()):
                done[f[0].strip()] = f
    for job_id, submit in ids:
        job = {
            "job_id": job_id,
            "submit_time": submit,
            "state": "UNKNOWN",
            "exit_code": None,
            "start_time": None,
            "end_time": None,
            "reason": "",
        }
        if job_id in done:  # the completion log is final
            f = done[job_id]
            code = f[2].split(":")
            job.update(
                state=f[1].split()[0],
                exit_code=int(code[0]) if code[0].isdigit() else None,
                eligible_time=_num(f[3]),
                start_time=_num(f[4]),
                end_time=_num(f[5]),
                nodes=f[6],
            )
        elif job_id in queued:
            f = queued[job_id]
            job.update(
                state=f[1],
                reason=f[2] if f[2] not in ("None", "(null)") else "",
                start_time=_num(f[3]) if f[1] != "PENDING" else None,
            )
        result["jobs"].append(job)
    last = result["jobs"][-1]
    result["job_id"] = last["job_id"]
    result["state"] = last["state"]
    result["finished"] = all(j["state"] in FINISHED for j in result["jobs"])
    result["detail"] = last["reason"]
    if last["state"].startswith("CANCELLED"):
        # Slurm's ExitCode of a cancelled job is its batch shell's (0, or the signal that
        # ended it), not the workload's: that one (75 after a checkpoint) is in run.json
        result["detail"] = "cancelled (scancel); the workload's own exit code is in its run record"
    elif last["exit_code"] is not None:
        result["detail"] = "exit code %d" % last["exit_code"]
    result["progress"] = progress(result)
    if log_lines:
        result["log_tail"] = log_tail(run_dir, last["job_id"], log_lines)
    result["scheduler"] = scheduler_section(result["jobs"], read_attempts(run_dir), read_ends(run_dir))
    return result


def scheduler_section(jobs, attempts=(), ends=None):
    """The run record's `scheduler` section: first submit to last end, summed queue waits.

    With the batch script's attempts ledger, the total queue wait is the sum of each
    attempt's real wait (`attempt_times`: from its submit, or requeue, or the end of the
    attempt before it if that came later, to its start), and `attempt_times` lists them
    (the run's timeline cuts each attempt's phases from them); without the ledger, each
    job's eligible (or submit) time to its start."""
    first, last = jobs[0], jobs[-1]
    waits = []
    timed = attempt_times(attempts, ends or {}) if attempts else []
    if timed:
        for entry in timed:
            if entry["ready_time"] is not None and entry["start_time"] is not None:
                waits.append(max(0.0, entry["start_time"] - entry["ready_time"]))
    else:
        for j in jobs:
            ready = j.get("eligible_time") or j.get("submit_time")
            if ready is not None and j.get("start_time") is not None:
                waits.append(max(0.0, j["start_time"] - ready))
    section = {
        "kind": "slurm",
        "job_id": first["job_id"],
        "job_ids": [j["job_id"] for j in jobs],
        "submit_time": first["submit_time"],
        "start_time": first["start_time"],
        "end_time": last["end_time"],
        "state": last["state"],
        "exit_code": last["exit_code"],
        "segments": len(jobs),
        "attempts": len(attempts) or len(jobs),
        "requeues": sum(1 for a in attempts if a[1] > 0),
        "queue_wait_s": None,
        "queue_wait_total_s": None,
        "queue_wait_resolution_s": QUEUE_WAIT_RESOLUTION_S,
    }
    if timed:
        section["attempt_times"] = timed
    if first["submit_time"] is not None and first["start_time"] is not None:
        section["queue_wait_s"] = round(max(0.0, first["start_time"] - first["submit_time"]), 3)
    if waits:
        section["queue_wait_total_s"] = round(sum(waits), 3)
    return section


def sacct_accounting(module, jobs, env, fields):
    """sacct's accounting of the run's jobs, as text: bench parses it
    (bench/targets/slurm_accounting.py); a site without accounting storage answers rc != 0."""
    ids = ",".join(j["job_id"] for j in jobs)
    rc, out, err = run_slurm(module, ["sacct", "--parsable2", "--noconvert", "-j", ids, "-o", fields], env)
    return {"rc": rc, "stdout": out, "stderr": err}


def cancel(module, run_dir, env):
    ids = [i for i, _ in read_jobs(run_dir)]
    if not os.path.isdir(run_dir):
        module.fail_json(msg="no run directory %s on the cluster: was this run submitted here?" % run_dir)
    # Mark first, so a job that checkpoints on the way down does not resubmit itself.
    with open(os.path.join(run_dir, CANCEL_MARK), "w") as fh:
        fh.write("cancel requested\n")
    if not ids:
        return {"changed": True, "cancelled": []}
    rc, out, err = run_slurm(module, ["scancel"] + ids, env)
    if rc != 0:
        module.fail_json(msg="scancel %s failed: %s" % (" ".join(ids), err.strip()))
    return {"changed": True, "cancelled": ids}


def list_runs(module, runs_root, env, commit, env_name, log_lines):
    """Every run under runs_root (optionally of one commit), each queried as above."""
    runs = []
    if not os.path.isdir(runs_root):
        return {"runs": runs}
    for name in sorted(os.listdir(runs_root)):
        run_dir = os.path.join(runs_root, name)
        if not os.path.exists(os.path.join(run_dir, JOBS_FILE)):
            continue
        source = read_source(run_dir)
        if commit and not str(source.get("commit") or "").startswith(commit):
            continue
        if env_name and source.get("env") not in (None, env_name):
            continue
        out = query(module, run_dir, env, log_lines)
        out["run_id"] = name
        runs.append(out)
    return {"runs": runs}


def watch(module, runs_root, env, known, wait_s, poll_s, log_lines):
    """Every run of `known` (run id -> the progress the caller last saw), queried again every
    `poll_s` seconds until one differs from it or has finished, or `wait_s` has passed; the
    last query of each is returned (action list's shape). The log tails are read once, at
    the end: a long job's log is not read every second."""
    bad = [run_id for run_id in known if not RUN_ID.match(run_id)]
    if bad or not known:
        module.fail_json(
            msg="runs must map run ids (letters, digits, . _ -) to what was last seen, got %r" % (bad or known)
        )
    deadline = time.monotonic() + max(0.0, wait_s)
    while True:
        runs = []
        for run_id in sorted(known):
            out = query(module, os.path.join(runs_root, run_id), env, 0)
            out["run_id"] = run_id
            runs.append(out)
        left = deadline - time.monotonic()
        if left <= 0 or any(r["finished"] or r["progress"] != (known[r["run_id"]] or "") for r in runs):
            break
        time.sleep(min(max(poll_s, 0.1), left))
    for out in runs:
        if out["jobs"]:
            out["log_tail"] = log_tail(os.path.join(runs_root, out["run_id"]), out["job_id"], log_lines)
    return {"runs": runs}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            run_dir=dict(type="path", required=True),
            action=dict(type="str", default="query", choices=["query", "cancel", "list", "watch"]),
            runs=dict(type="dict", default={}),
            wait_s=dict(type="float", default=0),
            poll_s=dict(type="float", default=1),
            commit=dict(type="str", default=""),
            env_name=dict(type="str", default=""),
            slurm_env=dict(type="dict", default={}),
            log_lines=dict(type="int", default=30),
            accounting_fields=dict(type="str", default=""),
            timeout_s=dict(type="int", default=60),
        ),
        supports_check_mode=True,
    )
    env = {str(k): str(v) for k, v in module.params["slurm_env"].items()}
    run_dir = module.params["run_dir"]
    if module.params["action"] == "cancel":
        if module.check_mode:
            module.exit_json(changed=True)
        module.exit_json(**cancel(module, run_dir, env))
    if module.params["action"] == "list":
        module.exit_json(
            changed=False,
            **list_runs(
                module, run_dir, env, module.params["commit"], module.params["env_name"], module.params["log_lines"]
            ),
        )
    if module.params["action"] == "watch":
        params = module.params
        found = watch(module, run_dir, env, params["runs"], params["wait_s"], params["poll_s"], params["log_lines"])
        module.exit_json(changed=False, **found)
    out = query(module, run_dir, env, module.params["log_lines"])
    if module.params["accounting_fields"] and out["finished"] and out["jobs"]:
        out["accounting"] = sacct_accounting(module, out["jobs"], env, module.params["accounting_fields"])
    module.exit_json(changed=False, **out)


if __name__ == "__main__":
    main()
