"""The Slurm job's command line, rendered here so that the batch script runs it as is.

Why: a job's command is built by one function (bench/targets/launch.py's `recorded_launch`:
workload -> launcher -> recorder) for every target. The batch script
(ansible/roles/atlas/templates/job.sbatch.j2) used to pick the launcher again in Jinja;
now it gets this module's line as the playbook variable `atlas_job_command` and only sets
the few shell variables that exist in the job alone:

- `$PYTHON`: the workload's Python (a venv path, or `python` of conda or of the image);
- `${PY[@]}`: what starts the recorder (`$PYTHON`, or `singularity exec ... python`);
- `$RUN_DIR`: the run folder on the cluster;
- `$HEAD_NODE`, `$RDZV_PORT`, `$SLURM_JOB_ID`: the rendezvous of a multi-node job (torchrun's
  c10d rendezvous on the allocation's first node, https://pytorch.org/docs/stable/elastic/run.html).

Every other word is shell-quoted (newlines become `$'\\n'`, so each value stays on its line
of the script): an env name or override such as `x; touch /tmp/pwned` stays text.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import Any

from bench.errors import ConfigError
from bench.targets.base import JobSpec
from bench.targets.launch import C10dRendezvous, launcher, recorded_launch

# A word the job fills in: NUL can be in no argv word nor YAML value, so no user value can
# forge one. Each maps to the shell expansion the batch script provides.
SHELL_WORDS = {
    "\0PYTHON\0": '"$PYTHON"',
    "\0RECORDER\0": '"${PY[@]}"',
    "\0RUN_DIR\0": '"$RUN_DIR"',
    "\0HEAD_NODE\0": '"$HEAD_NODE"',
    "\0RDZV_PORT\0": '"$RDZV_PORT"',
    "\0SLURM_JOB_ID\0": '"$SLURM_JOB_ID"',
}
_PLACEHOLDER = re.compile("(" + "|".join(re.escape(word) for word in SHELL_WORDS) + ")")
# torchrun passes TERM on to its workers but dies of USR1 without telling them, so a job
# under torchrun gets the time-limit warning as TERM (the workload checkpoints on either).
WARN_UNDER_TORCHRUN, WARN_DIRECT = "TERM", "USR1"


def shell_word(word: str) -> str:
    """One argv word as shell text: literal parts quoted, placeholders as their expansions."""
    parts = []
    for part in _PLACEHOLDER.split(word):
        if part in SHELL_WORDS:
            parts.append(SHELL_WORDS[part])
        elif part:
            parts.append(shlex.quote(part).replace("\n", "'$'\\n''").replace("\r", "'$'\\r''"))
    return "".join(parts) or "''"


def shell_line(argv: Sequence[str]) -> str:
    """The command as one line of shell, which runs exactly `argv` once the job's variables are set."""
    return " ".join(shell_word(word) for word in argv)


def request_shape(slurm: dict[str, Any], hardware: dict[str, Any]) -> tuple[int, int]:
    """Nodes and GPUs per node the batch script requests: `slurm:` (seeded from `shape:`),
    GPUs defaulting to `hardware.gpus_per_node` as ansible/roles/atlas/defaults/main.yml does."""
    nodes = slurm.get("nodes", 1)
    gpus = slurm.get("gpus_per_node", hardware.get("gpus_per_node") or 0)
    for name, value in (("nodes", nodes), ("gpus_per_node", gpus)):
        if isinstance(value, bool) or not isinstance(value, int) or value < (1 if name == "nodes" else 0):
            raise ConfigError(
                f"slurm.{name} must be a whole number ({'>= 1' if name == 'nodes' else '>= 0'}), got {value!r}"
            )
    return nodes, gpus


def job_variables(
    env_name: str,
    job: JobSpec,
    slurm: dict[str, Any],
    hardware: dict[str, Any],
    recorder_options: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The playbook variables of the job's command: `atlas_job_command` (the line the batch
    script runs), `atlas_job_warn_signal` (what the time-limit warning is passed on as) and
    `atlas_env_slurm` with the nodes and GPUs the command was rendered for, so the
    `#SBATCH` request and the launcher cannot disagree."""
    nodes, gpus = request_shape(slurm, hardware)
    rendezvous = C10dRendezvous("\0HEAD_NODE\0:\0RDZV_PORT\0", "\0SLURM_JOB_ID\0") if nodes > 1 else None
    argv = recorded_launch(
        env_name,
        job,
        "\0RUN_DIR\0",
        nodes,
        gpus,
        python="\0PYTHON\0",
        rendezvous=rendezvous,
        recorder_options=recorder_options,
        recorder_python="\0RECORDER\0",
    )
    if nodes > 1:  # one recorder and one torchrun per node
        argv = ["srun", f"--nodes={nodes}", "--ntasks-per-node=1", "--kill-on-bad-exit=1", *argv]
    return {
        "atlas_job_command": shell_line(argv),
        "atlas_job_warn_signal": WARN_UNDER_TORCHRUN if launcher(nodes, gpus, rendezvous) else WARN_DIRECT,
        "atlas_env_slurm": {**slurm, "nodes": nodes, "gpus_per_node": gpus},
    }
