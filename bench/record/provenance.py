"""Where and with what a run ran: hardware, software, code, image, scheduler.

These fill `run.json` so that "identical jobs" can be checked (same config hash, code
sha, image digest) and so that a surprising number can be explained later.
"""

from __future__ import annotations

import os
import platform
import socket
import subprocess
from pathlib import Path
from typing import Any

import psutil

from bench.record.cgroups import read_limits


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


def software() -> dict[str, Any]:
    """Python always; torch/CUDA/cuDNN only if torch is installed (imported lazily,
    and only here, after the job has started, so it costs the job nothing)."""
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": None,
        "cuda": None,
        "cudnn": None,
    }
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


def git_info(cwd: Path | None = None) -> dict[str, Any]:
    """Commit and dirtiness of the code; ATLAS_GIT_SHA wins (images have no .git)."""
    sha = os.environ.get("ATLAS_GIT_SHA")
    dirty: bool | None = None
    if os.environ.get("ATLAS_GIT_DIRTY") in ("0", "1"):
        dirty = os.environ["ATLAS_GIT_DIRTY"] == "1"
    try:
        if not sha:
            sha = (
                subprocess.run(
                    ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10, check=True
                ).stdout.strip()
                or None
            )
        if dirty is None:
            out = subprocess.run(
                ["git", "status", "--porcelain", "--untracked-files=no"],
                cwd=cwd,
                capture_output=True,
                text=True,
                timeout=10,
                check=True,
            ).stdout
            dirty = bool(out.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return {"sha": sha or None, "dirty": dirty}


def image_info() -> dict[str, Any]:
    return {"ref": os.environ.get("ATLAS_IMAGE_REF") or None, "digest": os.environ.get("ATLAS_IMAGE_DIGEST") or None}


def _float_env(name: str) -> float | None:
    try:
        return float(os.environ[name])
    except (KeyError, ValueError):
        return None


def scheduler_info(default_kind: str | None) -> dict[str, Any]:
    """What the job itself can tell about its scheduler; targets merge in more later."""
    kind, job_id = default_kind, None
    if os.environ.get("SLURM_JOB_ID"):
        kind, job_id = "slurm", os.environ["SLURM_JOB_ID"]
    elif os.environ.get("KUBERNETES_SERVICE_HOST"):
        kind = kind if kind in ("openshift", "kubernetes") else "openshift"
        job_id = os.environ.get("POD_NAME") or os.environ.get("HOSTNAME") or hostname()
    elif os.environ.get("ATLAS_JOB_ID"):
        job_id = os.environ["ATLAS_JOB_ID"]
    return {
        "kind": kind,
        "job_id": job_id,
        "submit_time": _float_env("ATLAS_SUBMIT_TIME"),
        "start_time": None,
        "end_time": None,
        "queue_wait_s": None,
    }
