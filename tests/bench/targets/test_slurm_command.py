"""bench/targets/slurm_command.py: the line the batch script runs is `recorded_launch`'s command,
once bash has filled in the job's own variables, for every launcher and for hostile values."""

from __future__ import annotations

import json
import secrets
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from bench.errors import ConfigError
from bench.targets.base import JobSpec
from bench.targets.launch import C10dRendezvous, recorded_launch
from bench.targets.slurm_command import job_variables, request_shape, shell_line

OPTIONS = ("--kind", "slurm", "--scheduler", "slurm")


def run_line(line: str, tmp_path: Path, **variables: str) -> list[str]:
    """Run `line` in bash with a `python` that prints its argv as JSON; return that argv."""
    printer = tmp_path / "print-argv"
    printer.write_text(f"#!{sys.executable}\nimport json, sys\nprint(json.dumps(sys.argv))\n")
    printer.chmod(0o755)
    setup = "".join(f"{name}={shlex.quote(value)}\n" for name, value in variables.items())
    srun = 'srun() { while [[ "$1" == --* ]]; do shift; done; "$@"; }'  # runs its command here, once
    script = f'PYTHON={shlex.quote(str(printer))}\nPY=("$PYTHON")\n{setup}{srun}\n{line}\n'
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("nodes, gpus, warn", [(1, 0, "USR1"), (1, 1, "USR1"), (1, 4, "TERM"), (3, 2, "TERM")])
def test_the_rendered_line_runs_the_recorded_launch(tmp_path: Path, nodes: int, gpus: int, warn: str) -> None:
    tag = secrets.token_hex(4)
    canary = tmp_path / f"pwned-{tag}"
    env_name = f"satori; touch {canary} $(touch {canary})"
    overrides = (f"a=x; touch {canary}", f"b=$(touch {canary})`id`", "c=${HOME}", 'd=it\'s "q"\n#SBATCH --wrap=x\\')
    job = JobSpec(run_id="r1", experiment="smoke", commit="0" * 40, overrides=overrides)
    found = job_variables(env_name, job, {"nodes": nodes, "gpus_per_node": gpus}, {}, OPTIONS)
    line = found["atlas_job_command"]
    assert "\n" not in line and found["atlas_job_warn_signal"] == warn
    assert found["atlas_env_slurm"] == {"nodes": nodes, "gpus_per_node": gpus}
    run_dir = str(tmp_path / "run dir")
    argv = run_line(line, tmp_path, RUN_DIR=run_dir, HEAD_NODE="node7", RDZV_PORT="29500", SLURM_JOB_ID="42")
    rendezvous = C10dRendezvous("node7:29500", "42") if nodes > 1 else None
    expected = recorded_launch(
        env_name, job, run_dir, nodes, gpus, str(tmp_path / "print-argv"), rendezvous, recorder_options=OPTIONS
    )
    assert argv == expected
    assert line.startswith(f"srun --nodes={nodes} ") == (nodes > 1)
    assert not canary.exists()


def test_the_request_takes_the_nodes_gpus_of_slurm_or_the_hardware() -> None:
    assert request_shape({}, {}) == (1, 0)
    assert request_shape({}, {"gpus_per_node": 4}) == (1, 4)
    assert request_shape({"nodes": 2, "gpus_per_node": 1}, {"gpus_per_node": 4}) == (2, 1)
    with pytest.raises(ConfigError, match="slurm.nodes must be a whole number"):
        request_shape({"nodes": "2"}, {})


def test_an_empty_word_stays_a_word(tmp_path: Path) -> None:
    assert run_line(shell_line(["$PYTHON", ""]).replace("'$PYTHON'", '"$PYTHON"'), tmp_path)[1:] == [""]
