"""Checkpoints: one atomic bundle per save in `DIR/checkpoints/`, the last K kept.

A bundle holds G, D, G_ema, both optimizers, the iteration, the data position and every
RNG state, so a resumed run continues bit-exactly on CPU. Writing goes to a temporary
file that is fsynced, renamed into place and followed by an fsync of the directory: a
crash leaves either the old or the new bundle, never half of one. Each bundle has its
SHA-256 beside it (`ckpt-N.pt.sha256`, computed while the bytes are written and checked
against the file on disk before older bundles are pruned), because torch.load does not
test the zip's CRCs: a flipped bit in tensor data would otherwise resume silently with
different weights. Loading tries the newest bundle first and falls back to older ones
when one is unreadable or fails its digest; bundles exist but none loads is an error.
Free space is checked before a write (the bundle's tensor bytes, plus slack), and a full
disk (ENOSPC/EDQUOT) is one error line naming the folder, never a torch traceback.
"""

from __future__ import annotations

import errno
import hashlib
import os
import random
import re
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from workflows.biggan.errors import WorkloadConfigError

FORMAT = "atlas-biggan-checkpoint/1"
NAME = re.compile(r"^ckpt-(\d{8,})\.pt$")
DIGEST_SUFFIX = ".sha256"  # ckpt-N.pt.sha256: "<hex digest>  ckpt-N.pt" (sha256sum's format)
SPACE_SLACK = 1.1  # zip headers and pickled metadata on top of the tensor bytes, plus margin
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
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


class CheckpointSpaceError(WorkloadConfigError):
    """The disk cannot hold the next bundle; the previous bundles are untouched."""

    exit_code = 74  # disk full (bench's EXIT_DISK_FULL): not a configuration problem


def save(run_dir: Path, bundle: dict[str, Any], keep: int) -> Path:
    """Write `ckpt-<iteration>.pt` and its digest atomically, verify it, then delete all
    but the newest `keep` (older bundles stay until the new one is verified on disk)."""
    folder = checkpoint_dir(run_dir)
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob(".ckpt-*.tmp"):  # left by a crash in the middle of a save
        stale.unlink(missing_ok=True)
    final = folder / f"ckpt-{bundle['iteration']:08d}.pt"
    check_space(folder, final.name, int(tensor_bytes(bundle) * SPACE_SLACK) + (1 << 20))
    fd, tmp = tempfile.mkstemp(prefix=".ckpt-", suffix=".tmp", dir=folder)
    writer: _HashingWriter | None = None
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; others in the group (OpenShift GID 0) read it
        with os.fdopen(fd, "wb") as fh:
            writer = _HashingWriter(fh)
            torch.save({"format": FORMAT, **bundle}, writer)
            fh.flush()
            os.fsync(fh.fileno())
        if file_sha256(Path(tmp)) != writer.hexdigest():
            raise WorkloadConfigError(f"checkpoint {final} read back differs from what was written (disk fault?)")
        _write_text_atomic(digest_path(final), f"{writer.hexdigest()}  {final.name}\n", folder)
        os.replace(tmp, final)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        full = _disk_full(exc, writer)
        if full is not None:
            raise CheckpointSpaceError(
                f"disk full while writing checkpoint {final} ({os.strerror(full.errno)}); "
                f"{_free(folder)} free; the previous checkpoint is kept: free space and rerun to resume"
            ) from None
        raise
    _fsync_dir(folder)
    for old in list_checkpoints(run_dir)[keep:]:
        old.unlink(missing_ok=True)
        digest_path(old).unlink(missing_ok=True)
    for orphan in folder.glob(f"ckpt-*.pt{DIGEST_SUFFIX}"):  # a crash between digest and bundle rename
        if not orphan.with_name(orphan.name[: -len(DIGEST_SUFFIX)]).exists():
            orphan.unlink(missing_ok=True)
    _fsync_dir(folder)
    return final


class _HashingWriter:
    """A file wrapper that hashes and counts what torch.save writes, and keeps the first
    OSError (torch re-raises a writer's error as a RuntimeError without its errno)."""

    def __init__(self, fh: Any) -> None:
        self.fh, self.sha, self.error = fh, hashlib.sha256(), None

    def write(self, data: Any) -> int:
        try:
            n = self.fh.write(data)
        except OSError as exc:
            self.error = self.error or exc
            raise
        self.sha.update(data)
        return n

    def flush(self) -> None:
        self.fh.flush()

    def hexdigest(self) -> str:
        return self.sha.hexdigest()


def _disk_full(exc: BaseException, writer: _HashingWriter | None) -> OSError | None:
    for candidate in (exc, exc.__cause__, exc.__context__, writer.error if writer else None):
        if isinstance(candidate, OSError) and candidate.errno in DISK_FULL:
            return candidate
    return None


def tensor_bytes(obj: Any) -> int:
    """Bytes of every tensor in a nested bundle: what a checkpoint needs on disk, at least."""
    if isinstance(obj, torch.Tensor):
        return obj.numel() * obj.element_size()
    if isinstance(obj, dict):
        return sum(tensor_bytes(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(tensor_bytes(v) for v in obj)
    return 0


def check_space(folder: Path, name: str, needed: int) -> None:
    """CheckpointSpaceError before writing when the file system has less than `needed` bytes."""
    try:
        st = os.statvfs(folder)
    except OSError:  # cannot tell: the write itself will say
        return
    free = st.f_bavail * st.f_frsize
    if free < needed:
        raise CheckpointSpaceError(
            f"no space for checkpoint {folder / name}: needs about {_mb(needed)}, {_mb(free)} free; "
            "the previous checkpoint is kept: free space and rerun to resume"
        )


def _free(folder: Path) -> str:
    try:
        st = os.statvfs(folder)
    except OSError:
        return "unknown"
    return _mb(st.f_bavail * st.f_frsize)


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def digest_path(bundle_path: Path) -> Path:
    return bundle_path.with_name(bundle_path.name + DIGEST_SUFFIX)


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _write_text_atomic(path: Path, text: str, folder: Path) -> None:
    """Write the digest file as readable as its bundle (mkstemp makes 0600): another uid of
    the group (OpenShift GID 0) that can read the bundle must be able to read its digest."""
    fd, tmp = tempfile.mkstemp(prefix=".ckpt-digest-", suffix=".tmp", dir=folder)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _sidecar_digest(sidecar: Path) -> str | None:
    """The digest a sidecar names, or None when it names none: missing, empty (a crash
    between create and write), unreadable to this uid, or not a SHA-256. The bundle's zip
    CRC then decides, so a sidecar that says nothing never condemns an intact bundle."""
    try:
        words = sidecar.read_text().split()
    except (OSError, UnicodeDecodeError):
        return None
    if not words or len(words[0]) != 64 or any(c not in "0123456789abcdef" for c in words[0]):
        return None
    return words[0]


def verify(path: Path) -> None:
    """WorkloadConfigError naming `path` when its bytes do not match its digest file (or,
    for a bundle written before digests, when a zip member fails its CRC)."""
    expected = _sidecar_digest(digest_path(path))
    if expected is not None:
        if file_sha256(path) != expected:
            raise WorkloadConfigError(
                f"checkpoint {path} is corrupt (its SHA-256 differs from {digest_path(path).name})"
            )
        return
    try:
        with zipfile.ZipFile(path) as zf:
            bad = zf.testzip()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise WorkloadConfigError(f"checkpoint {path} is unreadable (not a complete zip: {exc})") from exc
    if bad is not None:
        raise WorkloadConfigError(f"checkpoint {path} is corrupt (zip member {bad} fails its CRC)")


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
    verify(path)
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
            "no usable checkpoint in "
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
