"""Stop requests: SIGTERM/SIGUSR1/SIGINT become a flag the training loop checks after each iteration.

Slurm and Kubernetes send a signal before a time limit or a preemption; letting the
current iteration finish and then checkpointing loses nothing.
"""

from __future__ import annotations

import signal
from typing import Any

STOP_SIGNALS = ("SIGTERM", "SIGUSR1", "SIGINT")


class StopRequest:
    """Turns SIGTERM/SIGUSR1/SIGINT into a flag checked after each iteration."""

    def __init__(self) -> None:
        self.signal_name: str | None = None
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        for name in STOP_SIGNALS:
            sig = getattr(signal, name, None)
            if sig is not None:
                try:
                    self._previous[sig] = signal.signal(sig, self._handle)
                except ValueError:  # not the main thread
                    pass

    def _handle(self, signum: int, _frame: Any) -> None:
        self.signal_name = signal.Signals(signum).name

    def uninstall(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
