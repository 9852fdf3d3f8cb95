"""The progress line of `bench run`'s wait, kept ticking on a terminal while a status waits.

A target that waits on the scheduler's side (`Target.long_poll_s`, e.g. Slurm's watch.yml)
blocks `bench run` for up to that long between two reports. On a terminal the line
`env/run: running  12 s detail` would then stand still; `Ticker` rewrites it every second
with the time waited so far, and is stopped before the wait loop writes anything else.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import TextIO

CLEAR = "\r\033[K"  # bench's own control sequence: written past the escaping of data (bench.terminal)


def running_line(env: str, run_id: str, state: str, elapsed_s: float, detail: str) -> str:
    """`env/run: state  elapsed s detail`: the one line of a run still going."""
    return f"{env}/{run_id}: {state} {elapsed_s:5.0f} s {detail}"


def clear(out: TextIO) -> None:
    """Go back to the start of the terminal's line and blank it."""
    print(CLEAR, end="", file=getattr(out, "control_stream", out))


class Ticker:
    """While its block runs, rewrites the last running line every `every_s` with the
    elapsed time since `start`; does nothing when `parts` is None (no line yet, or not a
    terminal)."""

    def __init__(
        self, out: TextIO, start: float, parts: tuple[str, str, str, str] | None, every_s: float = 1.0
    ) -> None:
        self.out, self.start, self.parts, self.every_s = out, start, parts, every_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _run(self) -> None:
        assert self.parts is not None
        env, run_id, state, detail = self.parts
        while not self._stop.wait(self.every_s):
            clear(self.out)
            print(running_line(env, run_id, state, time.monotonic() - self.start, detail), end="", file=self.out)
            self.out.flush()

    def __enter__(self) -> Ticker:
        if self.parts is not None:
            self._thread = threading.Thread(target=self._run, name="bench-wait-line", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
