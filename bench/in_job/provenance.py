"""Where and with what a run ran: hardware, software, code, image, scheduler.

These fill `run.json` so that "identical jobs" can be checked (same config hash, code
sha, image digest) and so that a surprising number can be explained later.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil

from bench.in_job.cgroups import read_limits
from bench.in_job.scheduler import SchedulerProbe


def hostname() -> str:
    return socket.gethostname() or platform.node() or "host"


def cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "cpu", "Processor") and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or None


def hardware(gpus: list[dict[str, Any]]) -> dict[str, Any]:
    limits = read_limits()
    try:
        affinity = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = None
    return {
        "cpu_model": cpu_model(),
        "cpu_cores_logical": psutil.cpu_count(logical=True),
        "cpu_cores_physical": psutil.cpu_count(logical=False),
        "cpu_affinity_cores": affinity,
        "memory_bytes": psutil.virtual_memory().total,
        "cgroup": {
            "version": limits.version,
            "cpu_limit_cores": limits.cpu_limit_cores,
            "memory_limit_bytes": limits.memory_limit_bytes,
        },
        "gpus": gpus,
    }


def _torch_version() -> Any | None:
    """torch/version.py (a few constants) loaded on its own, without importing torch,
    which costs the recorder seconds of CPU and hundreds of MB; None where it is not found."""
    try:
        spec = importlib.util.find_spec("torch")  # a top-level name: finds it, imports nothing
        for folder in (spec.submodule_search_locations or []) if spec else []:
            path = Path(folder) / "version.py"
            if path.is_file():
                loaded = importlib.util.spec_from_file_location("_atlas_torch_version", path)
                module = importlib.util.module_from_spec(loaded)
                loaded.loader.exec_module(module)
                return module
    except Exception:  # an odd install: the import below decides
        return None
    return None


def software() -> dict[str, Any]:
    """Python always; torch/CUDA/cuDNN only if torch is installed. A CPU-only torch build
    (no CUDA, no ROCm, so no cuDNN) is named from its version file; any other is imported
    (lazily, here, after the job has started) to ask its cuDNN."""
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": None,
        "cuda": None,
        "cudnn": None,
    }
    version = _torch_version() if "torch" not in sys.modules else None
    if version is not None and getattr(version, "cuda", 0) is None and getattr(version, "hip", 0) is None:
        info["torch"] = str(version.__version__)
        return info
    try:
        import torch  # noqa: PLC0415 - optional and heavy
    except Exception:
        return info
    info["torch"] = torch.__version__
    info["cuda"] = getattr(torch.version, "cuda", None)
    try:
        info["cudnn"] = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    except Exception:
        info["cudnn"] = None
    return info


# Files that make a folder this project's tree: a sha is only this project's when the
# repository holding the folder tracks these at the same place.
PROJECT_MARKERS = ("bench/__init__.py", "workflows/biggan/__main__.py")
# Generated outputs, committed or not, that say nothing about the code that ran.
GENERATED = ("reports", "results")


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10, check=False)


def project_root(cwd: Path | None = None) -> Path | None:
    """The project tree the job runs from: the working folder, else bench's own checkout."""
    for candidate in (Path(cwd or Path.cwd()), Path(__file__).resolve().parents[2]):
        if all((candidate / m).is_file() for m in PROJECT_MARKERS):
            return candidate.resolve()
    return None


def git_info(cwd: Path | None = None) -> dict[str, Any]:
    """Commit and dirtiness of the project's code; ATLAS_GIT_SHA wins (targets pass the
    commit they deployed; images have no .git).

    `dirty` means the code differs from the commit: changes under reports/ and results/
    (generated outputs) do not count. A repository that merely encloses the tree (an
    exported `git archive` unpacked inside another checkout) is not the project's: its
    sha is refused and `note` says why.
    """
    sha = os.environ.get("ATLAS_GIT_SHA") or None
    dirty: bool | None = None
    if os.environ.get("ATLAS_GIT_DIRTY") in ("0", "1"):
        dirty = os.environ["ATLAS_GIT_DIRTY"] == "1"
    if sha and dirty is not None:
        return {"sha": sha, "dirty": dirty}
    root = project_root(cwd)
    if root is None:
        return {"sha": sha, "dirty": dirty, "note": "not run from the project's tree: no git facts"}
    try:
        prefix = _git(root, "rev-parse", "--show-prefix")
        if prefix.returncode != 0:
            return {"sha": sha, "dirty": dirty, "note": f"{root.name} is not in a git repository"}
        tracked = _git(root, "ls-files", "--error-unmatch", "--", *PROJECT_MARKERS)
        if tracked.returncode != 0:
            top = _git(root, "rev-parse", "--show-toplevel").stdout.strip()
            return {
                "sha": sha,
                "dirty": dirty,
                "note": f"the git repository at {top} encloses this tree but does not track it "
                "(an exported copy?): its commit is not this code's",
            }
        if not sha:
            sha = _git(root, "rev-parse", "HEAD").stdout.strip() or None
        if dirty is None:
            status = _git(
                root,
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ".",
                *(f":(exclude){g}" for g in GENERATED),
            )
            dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        pass
    return {"sha": sha, "dirty": dirty}


def image_info() -> dict[str, Any]:
    return {"ref": os.environ.get("ATLAS_IMAGE_REF") or None, "digest": os.environ.get("ATLAS_IMAGE_DIGEST") or None}


def _float_env(name: str) -> float | None:
    try:
        return float(os.environ[name])
    except (KeyError, ValueError):
        return None


def scheduler_info(kind: str | None, probe: SchedulerProbe) -> dict[str, Any]:
    """What the job itself can tell about its scheduler (the target passed in its kind and
    scheduler: bench.in_job.scheduler); targets merge in more at collection."""
    job_id = probe.job_id(os.environ)
    kind = kind or (probe.name if probe.name != "plain" else None)
    return {
        "kind": kind,
        "job_id": job_id,
        "submit_time": _float_env("ATLAS_SUBMIT_TIME"),
        "start_time": None,
        "end_time": None,
        "queue_wait_s": None,
    }
