"""The double's clock: every timestamp it writes comes from here, and tests move it.

Manual by default (tests call `advance(seconds)`, never sleep); `follow_wall_clock()` makes
it track real time for a person running the double by hand.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class Clock:
    def __init__(self, start: float | None = None) -> None:
        self._now = float(int(start if start is not None else time.time()))
        self._offset: float | None = None
        self._lock = threading.Lock()
        self.on_advance: list[Callable[[], None]] = []

    def now(self) -> float:
        with self._lock:
            return time.time() + self._offset if self._offset is not None else self._now

    def stamp(self, at: float | None = None) -> str:
        """RFC 3339 in UTC, seconds resolution, as metav1.Time marshals."""
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.now() if at is None else at))

    def micro_stamp(self) -> str:
        """metav1.MicroTime (an Event's eventTime)."""
        now = self.now()
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}Z"

    def advance(self, seconds: float) -> float:
        with self._lock:
            if self._offset is not None:
                self._offset += seconds
            else:
                self._now += seconds
        for callback in list(self.on_advance):
            callback()
        return self.now()

    def follow_wall_clock(self) -> None:
        with self._lock:
            self._offset = self._now - time.time()
