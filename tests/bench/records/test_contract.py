"""bench/records/contract.py: names, samples columns, exit codes and status words, queue wait."""

from __future__ import annotations

from bench.records import contract as c


def test_exit_status_from_signal_run_stop_or_code():
    assert c.exit_status(None, "SIGKILL", "success") == c.STATUS_KILLED
    assert c.exit_status(1, None, "max_seconds") == "max_seconds"  # the workload's last word wins
    assert c.exit_status(c.EXIT_OK) == c.STATUS_SUCCESS
    assert c.exit_status(c.EXIT_PREEMPTED) == c.STATUS_PREEMPTED
    assert c.exit_status(c.EXIT_CONFIG) == c.STATUS_FAILED
    assert c.EXIT_WORDS[c.EXIT_PREEMPTED].startswith("preempted")


def test_queue_wait_is_never_negative_and_needs_both_times():
    assert c.queue_wait_s(100.0, 130.25) == 30.25
    assert c.queue_wait_s(100.0, 99.0) == 0.0
    assert c.queue_wait_s(None, 5.0) is None and c.queue_wait_s(True, 5.0) is None


def test_samples_columns():
    assert c.gpu_columns(2)[: len(c.FIELD_NAMES)] == [f"gpu0_{n}" for n in c.FIELD_NAMES]
    assert c.gpu_ids(["time", "gpu10_" + c.GPU_UTIL, "gpu2_" + c.GPU_UTIL, "gpu_note"]) == ["gpu2", "gpu10"]
    assert c.BASE_COLUMNS[0] == "time" and len(set(c.FIELD_NAMES)) == len(c.FIELD_NAMES)
    assert c.samples_name("node 1/a") == "samples-node_1_a.csv"


def test_job_exit_code_is_the_launchers_unless_this_jobs_run_stop_says_otherwise():
    assert c.job_exit_code(c.EXIT_OK, "failed") == c.EXIT_OK  # 0 and 75 stand as they are
    assert c.job_exit_code(c.EXIT_PREEMPTED, "success") == c.EXIT_PREEMPTED
    assert c.job_exit_code(1, c.STATUS_PREEMPTED) == c.EXIT_PREEMPTED  # torchrun's 1 after a checkpoint
    assert c.job_exit_code(138, c.STATUS_SUCCESS) == c.EXIT_OK  # a late signal after the work was done
    assert c.job_exit_code(1, c.STATUS_MAX_SECONDS) == c.EXIT_OK
    assert c.job_exit_code(1, c.STATUS_FAILED) == 1 and c.job_exit_code(137) == 137
    assert c.job_exit_code(c.EXIT_USR1, None, warned=True) == c.EXIT_PREEMPTED  # USR1 before any handler
    assert c.job_exit_code(c.EXIT_USR1, None, warned=False) == c.EXIT_USR1
    for status in (*c.FINISHED_OK, c.STATUS_PREEMPTED):  # the same words as run.json's exit.status
        assert c.job_exit_code(1, status) == c.status_exit_code(c.exit_status(1, None, status))
