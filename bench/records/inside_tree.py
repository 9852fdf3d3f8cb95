"""Nothing from outside the results tree: its folders are real folders, its files the run's own.

A results tree is read by `bench archive` (which commits what it reads to a branch CI
pushes) and written by `collect`, `import` and restore. A symbolic link planted in it
(`results/e/r -> ~/private`, `results/e -> /elsewhere`) would make the reader take
files from outside the tree, or the writer put them there. So every folder between the
tree's root and a run is checked, component by component, to be a real folder (not a
link) that stays inside the root, and a run's files are opened without following links
(bench.records.jobfiles); a file that is not the run folder's own (a link, a device, a
second hard link to a file elsewhere) is skipped and named. The root itself is the
user's choice (`--results`) and may be a link.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from bench.errors import AtlasError
from bench.records.jobfiles import MAX_FILE_BYTES, JobFileRefused, _open_dir, _open_regular


def outside_why(root: Path, path: Path) -> str | None:
    """Why `path` is not a real folder of the tree at `root` (None when it is one).

    `path` must be `root` joined with plain names; each one must exist as a folder that is
    not a symbolic link, and the whole must resolve inside `root`.
    """
    root, path = Path(root), Path(path)
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        return f"{path} is not under {root}"
    here = root
    for part in parts:
        if part in ("", ".", "..") or "/" in part:
            return f"{here / part}: not a plain folder name"
        here = here / part
        try:
            mode = os.lstat(here).st_mode
        except FileNotFoundError:
            return None  # not there yet: the writer creates it as a real folder
        except OSError as exc:
            return f"{here}: cannot be read ({exc.strerror})"
        if stat.S_ISLNK(mode):
            return f"{here} is a symbolic link (to {os.readlink(here)}), not a folder of {root}"
        if not stat.S_ISDIR(mode):
            return f"{here} is not a folder"
    if not path.resolve().is_relative_to(root.resolve()):
        return f"{path} resolves to {path.resolve()}, outside {root}"
    return None


def require_inside(root: Path, path: Path, doing: str) -> None:
    """Refuse to write (or read) `path` when it would leave the tree at `root`: one AtlasError naming the fix."""
    why = outside_why(root, path)
    if why:
        raise AtlasError(
            f"{doing}: {why}. A results tree holds only real folders: replace the link with the folder it "
            "points to (or remove it) and run the command again"
        )


def own_files(
    run_dir: Path, names_ok: Callable[[str], bool] | None = None, max_bytes: int = MAX_FILE_BYTES
) -> tuple[dict[str, bytes], list[str]]:
    """({name: bytes} of the regular files the run folder owns, [why each other entry was skipped]).

    Read through a folder descriptor opened without following links; a link, a device, a
    folder, a file over `max_bytes` or a file with a second hard link (it also lives
    elsewhere, so it is not the run's own) is skipped and named. `names_ok(name)` filters names.
    """
    files: dict[str, bytes] = {}
    skipped: list[str] = []
    dir_fd = _open_dir(Path(run_dir))
    try:
        for name in sorted(os.listdir(dir_fd)):
            if names_ok is not None and not names_ok(name):
                continue
            try:
                fd = _open_regular(name, dir_fd, max_bytes)
            except JobFileRefused as exc:
                skipped.append(f"{run_dir.name}/{exc}")
                continue
            except FileNotFoundError:
                continue
            with os.fdopen(fd, "rb") as fh:
                if os.fstat(fh.fileno()).st_nlink > 1:
                    skipped.append(f"{run_dir.name}/{name}: has another hard link (a file from elsewhere), not taken")
                    continue
                data = fh.read(max_bytes + 1)
            if len(data) > max_bytes:
                skipped.append(f"{run_dir.name}/{name}: grew over the cap of {max_bytes} bytes while read, not taken")
                continue
            files[name] = data
    finally:
        os.close(dir_fd)
    return files, skipped
