"""Running batches in the terminal: status lines rewritten in place on a TTY, plain lines every N seconds elsewhere.

On a TTY (one pytest process) the lines are redrawn only while the caller's thread is blocked in a
wait (`LiveDisplay.foreground`): pytest writes nothing then, so nothing else moves the cursor. When
the wait ends, the lines of the batches that finished stay on screen as their last word, and the
lines of batches still running (a background pre-pull) are taken off until the next wait.

Elsewhere (output to a file, a CI log, or under pytest-xdist where the controller only reads what
the waiting worker writes into the run folder) a plain line per running batch is written once it has
run `every_s` seconds and then every `every_s` seconds, and its last word when it ends.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

from acceptance.progress.status import BatchStatus

ERASE_LINE = "\x1b[2K"
ERASE_BELOW = "\x1b[J"


def up(lines: int) -> str:
    return f"\x1b[{lines}A" if lines > 0 else ""


class Terminal(Protocol):
    """Where the lines go (pytest's terminal, with output capture suspended while writing)."""

    def width(self) -> int: ...

    def fresh_line(self) -> None:
        """Continue at the start of a line of our own (pytest's current line is ended)."""
        ...

    def write(self, text: str) -> None:
        """Raw text, flushed."""
        ...

    def line(self, text: str) -> None:
        """One whole line, on a line of its own."""
        ...

    def resume(self, at_line_start: bool) -> None:
        """Give the terminal back to pytest (it continues its current line of results, on a new line)."""
        ...


class LiveDisplay:
    """See the module docstring. `live`: rewrite lines in place (a TTY); `always`: the terminal is free to
    write at any time (the xdist controller), otherwise only inside `foreground`."""

    def __init__(
        self,
        terminal: Terminal,
        *,
        live: bool,
        every_s: float,
        always: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.terminal = terminal
        self.live = live
        self.every_s = every_s
        self.always = always
        self.clock = clock
        self._lock = threading.RLock()
        self._status: dict[str, BatchStatus] = {}
        self._first_seen: dict[str, float] = {}
        self._last_line: dict[str, float] = {}
        self._held = 0
        self._shown = 0

    # ------------------------------------------------------------ what the scheduler calls

    def update(self, status: BatchStatus) -> None:
        """A batch's latest status (from any thread)."""
        with self._lock:
            if status.key not in self._status:
                self._first_seen[status.key] = self.clock()
            self._status[status.key] = status
            if self._free():
                self._show()

    @contextmanager
    def foreground(self) -> Iterator[None]:
        """The calling thread waits for the cluster meanwhile: the terminal is the display's."""
        with self._lock:
            self._held += 1
        try:
            yield
        finally:
            with self._lock:
                self._held -= 1
                if self._held == 0:
                    self._settle()

    # ------------------------------------------------------------ drawing

    def _free(self) -> bool:
        return self.always or self._held > 0

    def _show(self) -> None:
        if self.live:
            self._draw([s.line(self._width()) for s in self._status.values()])
        else:
            self._plain()

    def _width(self) -> int:
        return max(20, self.terminal.width() - 1)

    def _draw(self, lines: list[str]) -> None:
        """Replace the lines on screen with `lines` (the cursor ends after the last one)."""
        if not lines and not self._shown:
            return
        if self._shown:
            out = ["\r" + up(self._shown - 1)]
        else:
            self.terminal.fresh_line()
            out = []
        for i, line in enumerate(lines):
            out.append(("\n" if i else "") + "\r" + ERASE_LINE + line)
        if len(lines) < self._shown:
            out.append(ERASE_BELOW)
        self.terminal.write("".join(out))
        self._shown = len(lines)

    def _plain(self) -> None:
        now = self.clock()
        wrote = False
        for key, status in list(self._status.items()):
            last = self._last_line.get(key)
            if status.done:
                if last is not None:
                    self.terminal.line(status.line())
                    wrote = True
                self._forget(key)
            elif now - (last if last is not None else self._first_seen[key]) >= self.every_s:
                self.terminal.line(status.line())
                self._last_line[key] = now
                wrote = True
        if wrote:
            self.terminal.resume(at_line_start=True)

    def _settle(self) -> None:
        """The wait ended: finished batches keep their last line; running ones leave the screen until the next."""
        if self.live:
            if not self._shown:
                return
            done = [key for key, s in self._status.items() if s.done]
            self._draw([self._status[key].line(self._width()) for key in done])
            self.terminal.resume(at_line_start=not done)
            self._shown = 0
            for key in done:
                self._forget(key)
        elif not self.always:
            self._plain()

    def _forget(self, key: str) -> None:
        self._status.pop(key, None)
        self._first_seen.pop(key, None)
        self._last_line.pop(key, None)
