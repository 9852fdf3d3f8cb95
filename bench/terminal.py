"""What bench prints to a terminal carries no control characters from data.

A record, a results-branch entry or an import names strings written by a job or by
whoever pushed them (a host name, a torch version, a provenance field). Printed raw, an
ESC sequence in one of them can rewrite the screen, hide a line or set the window title.
`bench` wraps stdout and stderr for the length of a command (`escaping`): every C0 control
character but newline and tab, DEL and every C1 control is written as `\\xNN`. bench's own
control sequences (the live status line's carriage return) go through `control_stream`.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def safe_text(text: str) -> str:
    """`text` with every control character (newline and tab kept) as a visible `\\xNN` / `\\uNNNN` escape."""
    return _CONTROL.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256 else f"\\u{ord(m.group()):04x}", text
    )


class EscapingStream:
    """A text stream that escapes control characters in everything written to it."""

    def __init__(self, stream: TextIO) -> None:
        self.control_stream = stream  # the stream itself: for bench's own control sequences only

    def write(self, text: str) -> int:
        self.control_stream.write(safe_text(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, encoding, fileno, buffer, ...
        return getattr(self.control_stream, name)


@contextmanager
def escaping() -> Iterator[None]:
    """sys.stdout and sys.stderr escape control characters until the block ends."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = EscapingStream(out), EscapingStream(err)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err
