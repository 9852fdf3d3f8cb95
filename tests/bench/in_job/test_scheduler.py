"""In-job scheduler probes (bench/in_job/scheduler/): one module per scheduler, one interface;
the recorder uses the scheduler the target passed in, else the one the job's variables show."""

from __future__ import annotations

import pkgutil
import re

import pytest

from bench.cli import main
from bench.errors import ConfigError
from bench.in_job import scheduler
from bench.in_job.observed_shape import observed_shape
from bench.in_job.provenance import scheduler_info
from bench.in_job.scheduler import probe_for

NAMES = sorted(m.name for m in pkgutil.iter_modules(scheduler.__path__))
SLURM_JOB = {"SLURM_JOB_ID": "42", "SLURM_NODEID": "1", "SLURM_JOB_NUM_NODES": "2", "SLURM_GPUS_ON_NODE": "4"}


@pytest.mark.parametrize("name", NAMES)
def test_every_probe_keeps_the_interface(name: str) -> None:
    probe = probe_for(name, {})
    assert probe.name == name
    assert probe.node_rank({}) == 0  # no variables: the first (the only) node
    job_id = probe.job_id({})
    assert job_id is None or isinstance(job_id, str)
    assert probe.nodes({}) == (None, None) and probe.gpus_per_node({}) == (None, None)


def test_slurm_reads_its_variables() -> None:
    probe = probe_for("slurm", SLURM_JOB)
    assert (probe.job_id(SLURM_JOB), probe.node_rank(SLURM_JOB)) == ("42", 1)
    shape = observed_shape([{}] * 8, ["python"], SLURM_JOB, probe)
    assert (shape["nodes"], shape["gpus_per_node"]) == (2, 4)
    assert shape["source"] == {"nodes": "SLURM_JOB_NUM_NODES", "gpus_per_node": "SLURM_GPUS_ON_NODE"}


def test_the_passed_in_scheduler_wins_over_the_variables() -> None:
    probe = probe_for("plain", SLURM_JOB)  # a local job started from inside a Slurm allocation
    assert probe.name == "plain" and probe.node_rank(SLURM_JOB) == 0
    assert observed_shape([{}], ["python"], SLURM_JOB, probe)["nodes"] == 1


def test_without_a_name_the_variables_choose_and_the_kind_is_passed_through(monkeypatch) -> None:
    assert probe_for(None, SLURM_JOB).name == "slurm"
    assert probe_for(None, {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}).name == "kubernetes"
    assert probe_for(None, {}).name == "plain"
    monkeypatch.setenv("POD_NAME", "atlas-run-0")
    info = scheduler_info("openshift", probe_for("kubernetes", {}))
    assert info["kind"] == "openshift" and info["job_id"] == "atlas-run-0"
    assert scheduler_info(None, probe_for("plain", {}))["kind"] is None


@pytest.mark.parametrize("name", ["no-such", "slurmm", "../plain", "__init__"])
def test_a_scheduler_without_a_probe_is_an_error_not_plain(name: str) -> None:
    """plain reads no job id and no node rank: a typo would make every node of a multi-node
    job write run.json. The error names the known probes."""
    with pytest.raises(
        ConfigError, match=rf"unknown scheduler {re.escape(repr(name))} .*known are kubernetes, plain, slurm"
    ):
        probe_for(name, SLURM_JOB)


def test_bench_record_refuses_an_unknown_scheduler_before_running_anything(tmp_path, capsys) -> None:
    run_dir = tmp_path / "run"
    code = main(["record", "--run-dir", str(run_dir), "--env", "local", "--scheduler", "slurmm", "--", "true"])
    assert code == 2
    assert "unknown scheduler 'slurmm'" in capsys.readouterr().err
    assert not (run_dir / "run.json").exists()
