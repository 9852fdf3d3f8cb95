"""Checkpoints: one atomic bundle per save in `DIR/checkpoints/`, the last K kept.

A bundle holds G, D, G_ema, both optimizers, the iteration, the data position and every
RNG state, so a resumed run continues bit-exactly on CPU. Writing goes to a temporary
file that is fsynced, renamed into place and followed by an fsync of the directory: a
crash leaves either the old or the new bundle, never half of one. Loading tries the
newest bundle first and falls back to older ones when it is unreadable.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from workflows.biggan.errors import WorkloadConfigError

FORMAT = "atlas-biggan-checkpoint/1"
NAME = re.compile(r"^ckpt-(\d{8,})\.pt$")
REQUIRED = (
    "format",
    "iteration",
    "data_position",
    "images_seen",
    "G",
    "D",
    "G_ema",
    "g_optim",
    "d_optim",
    "rng",
    "config_sha256",
)


def checkpoint_dir(run_dir: Path) -> Path:
    return run_dir / "checkpoints"


def list_checkpoints(run_dir: Path) -> list[Path]:
    """Bundles, newest (highest iteration) first; temporary files are ignored."""
    folder = checkpoint_dir(run_dir)
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := NAME.match(p.name))]
    return [p for _, p in sorted(found, reverse=True)]


def capture_rng(z_gen: torch.Generator) -> dict[str, Any]:
    """Every RNG the run draws from, as tensors/primitives (loadable with weights_only)."""
    np_state = np.random.get_state(legacy=False)
    rng: dict[str, Any] = {
        "python": _python_state_to_tensor(random.getstate()),
        "numpy_key": torch.from_numpy(np_state["state"]["key"].astype(np.int64)),
        "numpy_pos": int(np_state["state"]["pos"]),
        "torch": torch.get_rng_state(),
        "z": z_gen.get_state(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    return rng


def restore_rng(rng: dict[str, Any], z_gen: torch.Generator) -> None:
    random.setstate(_python_state_from_tensor(rng["python"]))
    np.random.set_state(
        {
            "bit_generator": "MT19937",
            "state": {"key": rng["numpy_key"].numpy().astype(np.uint32), "pos": rng["numpy_pos"]},
            "has_gauss": 0,
            "gauss": 0.0,
        }
    )
    torch.set_rng_state(rng["torch"])
    z_gen.set_state(rng["z"])
    if "cuda" in rng and torch.cuda.is_available():
        states = rng["cuda"]
        if len(states) == torch.cuda.device_count():
            torch.cuda.set_rng_state_all(states)


def _python_state_to_tensor(state: tuple) -> dict[str, Any]:
    version, internal, gauss = state
    return {"version": version, "internal": torch.tensor(internal, dtype=torch.int64), "gauss": gauss}


def _python_state_from_tensor(d: dict[str, Any]) -> tuple:
    return (d["version"], tuple(int(v) for v in d["internal"].tolist()), d["gauss"])


def save(run_dir: Path, bundle: dict[str, Any], keep: int) -> Path:
    """Write `ckpt-<iteration>.pt` atomically, then delete all but the newest `keep`."""
    folder = checkpoint_dir(run_dir)
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob(".ckpt-*.tmp"):  # left by a crash in the middle of a save
        stale.unlink(missing_ok=True)
    final = folder / f"ckpt-{bundle['iteration']:08d}.pt"
    fd, tmp = tempfile.mkstemp(prefix=".ckpt-", suffix=".tmp", dir=folder)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; others in the group (OpenShift GID 0) read it
        with os.fdopen(fd, "wb") as fh:
            torch.save({"format": FORMAT, **bundle}, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, final)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(folder)
    for old in list_checkpoints(run_dir)[keep:]:
        old.unlink(missing_ok=True)
    _fsync_dir(folder)
    return final


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # some platforms cannot open directories
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def load_file(path: Path) -> dict[str, Any]:
    """One bundle, checked; WorkloadConfigError naming the file when it is not a valid one."""
    try:
        bundle = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises several types for truncated or foreign files
        raise WorkloadConfigError(f"checkpoint {path} is unreadable ({type(exc).__name__}: {exc})") from exc
    if not isinstance(bundle, dict) or bundle.get("format") != FORMAT:
        raise WorkloadConfigError(f"checkpoint {path} is not an Atlas BigGAN checkpoint ({FORMAT})")
    missing = [k for k in REQUIRED if k not in bundle]
    if missing:
        raise WorkloadConfigError(f"checkpoint {path} lacks {', '.join(missing)}")
    return bundle


def load_latest(run_dir: Path) -> tuple[dict[str, Any], Path] | None:
    """Newest readable bundle; warns about each unreadable newer one; None if there is none.

    Raises WorkloadConfigError when bundles exist but none can be read: starting over
    silently would throw away the run.
    """
    candidates = list_checkpoints(run_dir)
    problems = []
    for path in candidates:
        try:
            bundle = load_file(path)
        except WorkloadConfigError as exc:
            problems.append(str(exc))
            print(f"biggan: warning: {exc}; trying the previous checkpoint", file=sys.stderr)
            continue
        return bundle, path
    if problems:
        raise WorkloadConfigError(
            "no readable checkpoint in "
            + str(checkpoint_dir(run_dir))
            + ": "
            + "; ".join(problems)
            + ". Move the folder away to start over."
        )
    return None


def state_sha256(state: dict[str, torch.Tensor]) -> str:
    """SHA-256 over the raw bytes of a state_dict's tensors, in sorted-key order.

    Each tensor is taken as a contiguous CPU copy, so memory format and device do not
    change the digest; equal digests mean bit-identical weights, buffers included.
    """
    h = hashlib.sha256()
    for key in sorted(state):
        t = state[key].detach().to("cpu").contiguous()
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()
