"""One line for a file system that refuses a write: read-only (EROFS), permission denied
(EACCES/EPERM), quota or disk full (EDQUOT/ENOSPC, bench.atomic_files). `bench` commands end
with this line and exit 2 instead of a traceback; nothing already recorded is touched.

An unwritable HOME is named as such, with the variables that move what is written there
(matplotlib's cache, ansible's temporary files, kubectl's cache).
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

REFUSED = {
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
}


def is_refused_write(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in REFUSED


def _under(path: str, folder: str | None) -> bool:
    if not folder:
        return False
    try:
        return Path(path).resolve().is_relative_to(Path(folder).resolve())
    except (OSError, ValueError):
        return False


def refused_write_line(exc: OSError) -> str:
    """'<what> (<errno name>): <path>; <fix>' for EROFS/EACCES/EPERM."""
    path = str(exc.filename or "?")
    what = REFUSED.get(exc.errno or 0, exc.strerror or str(exc))
    name = errno.errorcode.get(exc.errno or 0, "?")
    if _under(path, os.environ.get("HOME")):
        fix = (
            f"HOME ({os.environ['HOME']}) is not writable: set HOME, or XDG_CACHE_HOME and MPLCONFIGDIR, "
            "to a writable folder"
        )
    else:
        fix = "choose a writable folder (--results, --out, ATLAS_RUNS_DIR or env.yaml runs_dir) or fix its permissions"
    return f"{what} ({name}): {path}; {fix}"


def writable_caches() -> None:
    """Point matplotlib's cache at a temporary folder when HOME cannot hold it, so an
    unwritable HOME costs a slower first chart, not a warning in every report."""
    if "MPLCONFIGDIR" in os.environ:
        return
    home = os.environ.get("HOME")
    config = Path(os.environ.get("XDG_CONFIG_HOME") or (Path(home) / ".config" if home else tempfile.gettempdir()))
    existing = next((p for p in (config / "matplotlib", config, *config.parents) if p.exists()), None)
    if existing is not None and os.access(existing, os.W_OK):  # nothing is created here: only asked
        return
    os.environ["MPLCONFIGDIR"] = tempfile.mkdtemp(prefix="atlas-mpl-")
