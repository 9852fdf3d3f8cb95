"""Files a job wrote are data, never links: reading, copying and unpacking them safely.

A job (a container, a pod, a Slurm job, a pull request's code) writes its run folder;
`bench` reads that folder as the collecting user, who can write much more than the job
can. So a job that plants `job.log -> ~/.ssh/authorized_keys` or `run.json -> /dev/zero`
must change nothing and read nothing outside its run. Every open here refuses symbolic
links (`O_NOFOLLOW`, relative to a folder opened with `O_NOFOLLOW`), anything that is
not a regular file (devices, FIFOs, sockets: opened non-blocking, checked with `fstat`),
and files over a size cap; what was skipped is named, so collect can warn about it.
Tar streams (the OpenShift copy) keep only regular files and folders under the run's own
name. Compare `tarfile`'s "data" filter (https://docs.python.org/3/library/tarfile.html#tarfile-extraction-filter),
which still allows a link from one run's files to another run's.
"""

from __future__ import annotations

import os
import stat
import tarfile
from collections.abc import Iterable
from pathlib import Path

from bench.records.contract import SAMPLES_PREFIX, SAMPLES_SUFFIX

# A record is tens of MB; a larger file is a runaway log or an attack, and is not copied.
MAX_FILE_BYTES = int(os.environ.get("ATLAS_MAX_JOB_FILE_BYTES", 1 << 30))
_CHUNK = 1 << 20


class JobFileRefused(OSError):
    """A job's file that is not plain data (a link, a device, too large): never read."""


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def _open_dir(folder: Path) -> int:
    return os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)


def _open_regular(name: str, dir_fd: int, max_bytes: int) -> int:
    """An fd of regular file `name` in `dir_fd`; JobFileRefused naming why not."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        try:
            mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
        except OSError:
            raise exc from None
        raise JobFileRefused(f"{name}: {_kind(mode)}, not copied (files from a job are data, never links)") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise JobFileRefused(f"{name}: {_kind(st.st_mode)}, not copied (files from a job are data, never links)")
    if st.st_size > max_bytes:
        os.close(fd)
        raise JobFileRefused(f"{name}: {st.st_size} bytes, over the cap of {max_bytes} bytes, not copied")
    return fd


def read_bytes(path: Path, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a job's file; JobFileRefused for a link, a device, a FIFO or a file over the cap.

    Reads at most `max_bytes` + 1 bytes even if the file grows while it is read.
    """
    path = Path(path)
    dir_fd = _open_dir(path.parent)
    try:
        fd = _open_regular(path.name, dir_fd, max_bytes)
    finally:
        os.close(dir_fd)
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise JobFileRefused(f"{path.name}: grew over the cap of {max_bytes} bytes while read, not used")
    return data


def read_text(path: Path, max_bytes: int = MAX_FILE_BYTES) -> str:
    """`read_bytes` decoded as UTF-8 (undecodable bytes replaced: a job's text is not trusted)."""
    return read_bytes(path, max_bytes).decode("utf-8", "replace")


def record_names(names: Iterable[str], extra_files: tuple[str, ...] = ()) -> list[str]:
    """The names of a run folder that belong to its record (run.json, train.jsonl, profile.json, samples, extras)."""
    from bench.records.contract import PROFILE_JSON, RUN_JSON, TRAIN_JSONL

    wanted = {RUN_JSON, TRAIN_JSONL, PROFILE_JSON, *extra_files}
    return sorted(n for n in names if n in wanted or (n.startswith(SAMPLES_PREFIX) and n.endswith(SAMPLES_SUFFIX)))


def copy_record(src: Path, into: Path, extra_files: tuple[str, ...] = (), max_bytes: int = MAX_FILE_BYTES) -> list[str]:
    """Copy a run folder's record files into the fresh folder `into`; return what was skipped.

    Each file is opened without following links and written with O_EXCL|O_NOFOLLOW, so
    neither side can be redirected; a link, device, FIFO or oversized file is skipped and
    named ("job.log: a symbolic link, not copied ...").
    """
    skipped: list[str] = []
    src_fd = _open_dir(Path(src))
    try:
        for name in record_names(os.listdir(src_fd), extra_files):
            try:
                fd = _open_regular(name, src_fd, max_bytes)
            except JobFileRefused as exc:
                skipped.append(str(exc))
                continue
            except FileNotFoundError:
                continue
            with os.fdopen(fd, "rb") as fin:
                _write_new(Path(into) / name, fin, max_bytes, skipped)
    finally:
        os.close(src_fd)
    return skipped


def _write_new(dest: Path, fin, max_bytes: int, skipped: list[str]) -> None:  # noqa: ANN001 (a binary file)
    out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    written = 0
    with os.fdopen(out, "wb") as fout:
        while chunk := fin.read(_CHUNK):
            written += len(chunk)
            if written > max_bytes:
                break
            fout.write(chunk)
    if written > max_bytes:
        os.unlink(dest)
        skipped.append(f"{dest.name}: grew over the cap of {max_bytes} bytes while copied, not copied")


def sweep(folder: Path) -> list[str]:
    """Remove from `folder` (recursively) everything that is not a regular file or a folder.

    The last line of defence before a record is placed: whatever a fetch let through, the
    results tree holds no link, device or FIFO. Returns what was removed, named.
    """
    removed: list[str] = []
    root = Path(folder)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            mode = os.lstat(path).st_mode
            if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
                continue
            os.unlink(path)
            removed.append(f"{path.relative_to(root)}: {_kind(mode)}, removed (files from a job are data, never links)")
        dirnames[:] = [d for d in dirnames if stat.S_ISDIR(os.lstat(Path(dirpath) / d).st_mode)]
    return removed


def tar_members(
    tar: tarfile.TarFile, top: str, max_bytes: int = MAX_FILE_BYTES
) -> tuple[list[tarfile.TarInfo], list[str]]:
    """The members of a run's tar that are safe to extract, and the ones skipped, named.

    Only regular files and folders named `top` or `top/...`, without `..` or an absolute
    path, and at most `max_bytes` each; every link (to another run's files too), device
    and FIFO is skipped. Raises ValueError when nothing of `top` is in the tar.
    """
    keep: list[tarfile.TarInfo] = []
    skipped: list[str] = []
    for member in tar.getmembers():
        name = member.name
        parts = name.split("/")
        if name.startswith("/") or ".." in parts or parts[0] != top:
            raise ValueError(f"unexpected path {name!r} in the record tar of {top}")
        if member.isdir():
            keep.append(member)
        elif not member.isfile():
            kind = {tarfile.SYMTYPE: "a symbolic link", tarfile.LNKTYPE: "a hard link", tarfile.FIFOTYPE: "a FIFO"}
            kind = kind.get(member.type, "a device")
            skipped.append(f"{name}: {kind}, not copied (files from a job are data, never links)")
        elif member.size > max_bytes:
            skipped.append(f"{name}: {member.size} bytes, over the cap of {max_bytes} bytes, not copied")
        else:
            keep.append(member)
    if not any(m.name == top or m.name.startswith(top + "/") for m in keep):
        raise ValueError(f"the record tar of {top} holds none of its files")
    return keep, skipped


def read_json(path: Path, max_bytes: int = 16 << 20) -> object:
    """A job's JSON file parsed; OSError (JobFileRefused too) or ValueError when it is not plain JSON data.

    Too-deep nesting (RecursionError) is a ValueError here: a record is never that deep.
    """
    import json

    data = read_bytes(path, max_bytes)
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError(f"{Path(path).name}: nested too deeply to be a record") from None


def write_bytes(path: Path, data: bytes) -> None:
    """Write one of our own files (submit.json, a marker) into a folder a job can write.

    O_NOFOLLOW and a regular-file check: a link or FIFO the job planted under that name
    makes this fail (OSError) instead of writing through it.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(path, flags, 0o644)
    with os.fdopen(fd, "wb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise JobFileRefused(f"{Path(path).name}: not a regular file, not written")
        fh.truncate(0)
        fh.write(data)
