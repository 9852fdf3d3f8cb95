"""What the job can read from its scheduler, one small module per scheduler behind one interface.

The target knows its scheduler and passes it into the job (`bench record --kind KIND
--scheduler NAME`, or ATLAS_KIND / ATLAS_SCHEDULER for jobs started from an image or a
batch script); the recorder then asks this package's module of that name (plain, slurm,
kubernetes) for the job's id and node rank. A new scheduler is a new module here with a
`Probe` class; nothing in the recorder changes.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Mapping
from typing import Protocol

from bench.errors import ConfigError


class SchedulerProbe(Protocol):
    """The in-job facts of one scheduler, read from the job's environment variables."""

    name: str
    # seconds the recorder waits, after the job ended on a TERM, for the batch script's
    # CANCELLED mark (a scheduler whose script decides cancel vs requeue after the TERM); 0: none
    cancel_mark_wait_s: float

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

    def host(self, environ: Mapping[str, str]) -> str:
        """This node's name (its `samples-<host>.csv`, run.json's `hosts`)."""
        ...


def known_probes() -> list[str]:
    """The schedulers this package has a probe for (one module each)."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def probe_for(name: str | None, environ: Mapping[str, str]) -> SchedulerProbe:
    """The probe of scheduler `name`; when no name was passed in, the one the environment shows
    (a job started by an older bench): Slurm's or Kubernetes' variables, else plain.

    A name without a probe is an error, not `plain`: plain reads no job id and no node rank,
    so every node of a multi-node job would think it writes run.json."""
    if not name and environ.get("SLURM_JOB_ID"):
        name = "slurm"
    elif not name and environ.get("KUBERNETES_SERVICE_HOST"):
        name = "kubernetes"
    name = name or "plain"
    known = known_probes()
    if name not in known:
        raise ConfigError(
            f"unknown scheduler {name!r} for the in-job probe (--scheduler or ATLAS_SCHEDULER): "
            f"known are {', '.join(known)}; a new scheduler is a module bench/in_job/scheduler/<name>.py "
            "with a Probe class, named by its kind's `job_scheduler`"
        )
    return importlib.import_module(f"{__name__}.{name}").Probe()


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
