"""What the job can read from its scheduler, one small module per scheduler behind one interface.

The target knows its scheduler and passes it into the job (`bench record --kind KIND
--scheduler NAME`, or ATLAS_KIND / ATLAS_SCHEDULER for jobs started from an image or a
batch script); the recorder then asks this package's module of that name (plain, slurm,
kubernetes) for the job's id and node rank. A new scheduler is a new module here with a
`Probe` class; nothing in the recorder changes.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from typing import Protocol


class SchedulerProbe(Protocol):
    """The in-job facts of one scheduler, read from the job's environment variables."""

    name: str

    def job_id(self, environ: Mapping[str, str]) -> str | None:
        """The scheduler's id of this job (Slurm job id, pod name); None when it has none."""
        ...

    def node_rank(self, environ: Mapping[str, str]) -> int:
        """This node's rank in a multi-node job (0: the node that writes run.json)."""
        ...

    def nodes(self, environ: Mapping[str, str]) -> tuple[int | None, str | None]:
        """(nodes allocated to the job, the variable that said so); (None, None): unknown here."""
        ...

    def gpus_per_node(self, environ: Mapping[str, str]) -> tuple[int | None, str | None]:
        """(GPUs allocated per node, the variable that said so); (None, None): unknown here."""
        ...


def probe_for(name: str | None, environ: Mapping[str, str]) -> SchedulerProbe:
    """The probe of scheduler `name`; when no name was passed in, the one the environment shows
    (a job started by an older bench): Slurm's or Kubernetes' variables, else plain."""
    if not name and environ.get("SLURM_JOB_ID"):
        name = "slurm"
    elif not name and environ.get("KUBERNETES_SERVICE_HOST"):
        name = "kubernetes"
    if not name or not name.isidentifier():
        name = "plain"
    try:
        module = importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError:
        module = importlib.import_module(f"{__name__}.plain")
    return module.Probe()


def int_env(environ: Mapping[str, str], *names: str) -> tuple[int | None, str | None]:
    """The leading integer of the first of `names` that holds one, and that name."""
    for name in names:
        match = re.match(r"^\s*(\d+)", environ.get(name, ""))
        if match:
            return int(match.group(1)), name
    return None, None


def int_or_zero(text: str | None) -> int:
    try:
        return int(str(text))
    except ValueError:
        return 0
