"""SIGINT and SIGTERM end a run the same way: as pytest's KeyboardInterrupt, the signal's name kept.

The run's objects are then deleted and an INTERRUPTED report is signed, whichever signal came.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any


class SignalCatcher:
    """Installs the handlers of one run (main thread only) and remembers which signal stopped it."""

    def __init__(self) -> None:
        self.caught: str | None = None
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.caught = signal.Signals(signum).name
        raise KeyboardInterrupt(self.caught)

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()
