"""Starting the double: one function for tests and for a person at a shell.

`python -m tests.doubles.apiserver` (or `make api-double`) calls `start()` with the wall
clock and prints the kubeconfig it wrote; test fixtures call the same `start()` with a
manual clock they advance.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from bench.targets.manifests import SCHEMA_FILE
from tests.doubles.apiserver.clock import Clock
from tests.doubles.apiserver.server import OpenShiftApiDouble


def start(
    folder: Path,
    namespace: str = "atlas-biggan",
    token: str = "test-token",
    empty: bool = False,
    clock: Clock | None = None,
    **options: Any,
) -> tuple[OpenShiftApiDouble, Path]:
    """A running double whose TLS files, results volume and kubeconfig live in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    volume = folder / "pvc"
    volume.mkdir(exist_ok=True)
    double = OpenShiftApiDouble(
        namespace, volume, SCHEMA_FILE, token=token, clock=clock, create_namespace=not empty, **options
    ).start(folder)
    return double, double.write_kubeconfig(folder / "kubeconfig")


def run_by_hand(double: OpenShiftApiDouble, job_seconds: float) -> None:
    """What a person needs that tests drive themselves: time passes, Jobs run and finish."""
    double.clock.follow_wall_clock()

    def loop() -> None:
        started: set[str] = set()
        while not double.stopping:
            time.sleep(1.0)
            double.tick()
            for name in [
                n for n, j in list(double.jobs.items()) if n not in started and not j["status"].get("conditions")
            ]:
                started.add(name)
                threading.Thread(target=_run_job, args=(double, name, job_seconds), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()


def _run_job(double: OpenShiftApiDouble, name: str, seconds: float) -> None:
    pod = double.schedule_pod(name)
    pod_name = pod["metadata"]["name"]
    double.prepare_pod(pod_name)
    double.start_container(pod_name)
    time.sleep(seconds)
    if name in double.jobs:
        double.finish_container(pod_name, 0)
