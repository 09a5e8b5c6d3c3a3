"""Live progress in pytest's terminal while workloads run (registered on the controller by `acceptance.plugin`).

Which display, decided when the session starts:

- one process, a TTY: status lines rewritten in place, drawn by the waiting (main) thread;
- one process, no TTY (a CI log, a file): plain lines every ``--progress-every`` seconds;
- pytest-xdist: the waiting process is a worker whose output pytest does not show; it writes each
  batch's status into the run folder (`acceptance.criteria.scheduler`), and a thread of the controller
  reads those files every second and writes plain lines every ``--progress-every`` seconds.

``--progress-every 0`` turns progress off. Nothing here touches the junit file or the report.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import threading
import time
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from acceptance.progress.display import LiveDisplay
from acceptance.progress.status import FOLDER, BatchStatus, duration

if TYPE_CHECKING:
    from acceptance.run_session import AcceptanceSession

POLL_S = 1.0
STALE_S = 30.0


class PytestTerminal:
    """pytest's terminal reporter, with output capture suspended while a line is written."""

    def __init__(self, config: pytest.Config) -> None:
        self.reporter: Any = config.pluginmanager.get_plugin("terminalreporter")
        self.capture: Any = config.pluginmanager.get_plugin("capturemanager")
        self._interrupted: Path | None = None  # the test file whose line of results our lines interrupted
        self._resume: tuple[Path | None, bool] | None = None
        self._lock = threading.Lock()

    def _uncaptured(self) -> AbstractContextManager[None]:
        if self.capture is None:
            return nullcontext()
        found: AbstractContextManager[None] = self.capture.global_and_fixture_disabled()
        return found

    def width(self) -> int:
        return shutil.get_terminal_size().columns

    def fresh_line(self) -> None:
        current = self.reporter.currentfspath
        if isinstance(current, Path):
            self._interrupted = current
        with self._uncaptured():
            self.reporter.ensure_newline()
            if self.reporter._tw.width_of_current_line:  # -q: a line of dots without a file name
                self.reporter.write("\n", flush=True)

    def write(self, text: str) -> None:
        with self._uncaptured():
            self.reporter.write(text, flush=True)

    def line(self, text: str) -> None:
        self.fresh_line()
        self.write(text + "\n")

    def resume(self, at_line_start: bool) -> None:
        """Our lines are written: pytest's next result goes on a line of its own, after its file's name."""
        with self._lock:
            earlier = self._resume[0] if self._resume is not None else None
            self._resume = (self._interrupted or earlier, at_line_start)
            self._interrupted = None

    def catch_up(self) -> None:
        """Before pytest writes a result: end our last line, and put back the file name our lines interrupted."""
        with self._lock:
            pending, self._resume = self._resume, None
        if pending is None:
            return
        interrupted, at_line_start = pending
        with self._uncaptured():
            if not at_line_start:
                self.reporter.write("\n", flush=True)
            if interrupted is not None and self.reporter.currentfspath is None:
                self.reporter.write(f"{os.path.relpath(interrupted, self.reporter.startpath)} ", flush=True)
                self.reporter.currentfspath = interrupted


def read_statuses(folder: Path) -> list[BatchStatus]:
    """The statuses the waiting processes of a run wrote (a file being replaced is read next time)."""
    out = []
    for path in sorted((folder / FOLDER).glob("*.json")):
        try:
            out.append(BatchStatus.from_json(json.loads(path.read_text())))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return out


class Poller(threading.Thread):
    """Feeds the display from the run folder's status files (the controller under pytest-xdist)."""

    def __init__(self, folder: Path, display: LiveDisplay) -> None:
        super().__init__(name="acceptance-progress", daemon=True)
        self.folder = folder
        self.display = display
        self.stop = threading.Event()
        self._seen: dict[str, float] = {}

    def run(self) -> None:
        while not self.stop.wait(POLL_S):
            self.poll()

    def poll(self) -> None:
        for status in read_statuses(self.folder):
            if self._seen.get(status.key) == status.updated and status.done:
                continue
            self._seen[status.key] = status.updated
            age = time.time() - status.updated
            stale = not status.done and age > STALE_S  # the waiting process stopped writing (it crashed?)
            self.display.update(dataclasses.replace(status, note=f"no news for {duration(age)}") if stale else status)


class ProgressPlugin:
    """Sets the run's display up when the session starts, and stops its thread when it ends."""

    def __init__(self, config: pytest.Config, session: AcceptanceSession, every_s: float) -> None:
        self.config = config
        self.session = session
        self.every_s = every_s
        self.display: LiveDisplay | None = None
        self.poller: Poller | None = None
        self.terminal: PytestTerminal | None = None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.every_s <= 0 or self.config.pluginmanager.get_plugin("terminalreporter") is None:
            return
        terminal = self.terminal = PytestTerminal(self.config)
        if self.config.pluginmanager.has_plugin("dsession"):  # pytest-xdist: workers wait, we read their files
            self.display = LiveDisplay(terminal, live=False, every_s=self.every_s, always=True)
            self.poller = Poller(self.session.run_folder.path, self.display)
            self.poller.start()
            return
        tty = bool(terminal.reporter.isatty) and os.environ.get("TERM") != "dumb"
        self.display = LiveDisplay(terminal, live=tty, every_s=self.every_s)
        self.session.progress = self.display  # this process waits for the batches: its scheduler tells the display

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.terminal is not None:
            self.terminal.catch_up()

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.poller is not None:
            self.poller.stop.set()
            self.poller.join(timeout=5)
            self.poller.poll()  # the last words of batches that ended since the last look
