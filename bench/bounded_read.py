"""Every input file is read with a size bound, and a file over it is named with the bound.

`Path.read_text()` reads whatever is there: `--map /dev/zero` never ends and a runaway
log fills memory before anything checks it. Here at most `max_bytes + 1` bytes are read,
from a regular file or a character device alike, so the refusal costs the bound, not the
file; the message names the file, the bound and what the bound is for.
"""

from __future__ import annotations

from pathlib import Path

from bench.errors import AtlasError

KIB = 1024
MIB = 1024 * KIB


class TooLarge(AtlasError):
    """A file over its read bound: the message names the file and the bound."""


def _size(n: int) -> str:
    return f"{n // MIB:,} MiB" if n >= MIB and n % MIB == 0 else f"{n // KIB:,} KiB" if n % KIB == 0 else f"{n:,} bytes"


def read_bounded(path: Path, max_bytes: int, what: str) -> bytes:
    """The bytes of `path`, or TooLarge when it holds more than `max_bytes` (`what`: e.g. "an import map").

    OSError (missing file, no permission, a folder) is raised as it comes, for the caller to word.
    """
    with open(path, "rb") as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise TooLarge(f"{path}: larger than {_size(max_bytes)}, the bound for {what}; is it the right file?")
    return data


def read_text_bounded(path: Path, max_bytes: int, what: str, encoding: str = "utf-8", errors: str = "strict") -> str:
    """`read_bounded` decoded; UnicodeDecodeError as it comes."""
    return read_bounded(path, max_bytes, what).decode(encoding, errors)
