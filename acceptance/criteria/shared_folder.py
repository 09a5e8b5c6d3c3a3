"""Once-per-run work shared by every pytest process of a run.

With pytest-xdist the items of one criterion run in several worker processes, but
the cluster work behind them must happen once: all DCGM jobs of a run are submitted
together by whichever process needs one first, and the others adopt them. The
processes share a folder (created by the controller, handed to workers); an
exclusive `flock` on a file in it decides who does the work, and a marker file
records that it was done. Without xdist the same code runs in one process.
"""

from __future__ import annotations

import fcntl
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acceptance.errors import ClusterError


def write_json(target: Path, data: Any) -> None:
    """`data` as JSON at `target` (its folder made if needed), replaced whole: a reader sees the old or the new."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(target)


@dataclass(frozen=True)
class SharedFolder:
    """The folder every process of one run shares."""

    path: Path

    @contextmanager
    def lock(self, name: str, timeout_s: float = 600.0) -> Iterator[None]:
        """Hold the exclusive lock `name`, waiting at most `timeout_s` for it."""
        lock_path = self.path / f"{name}.lock"
        deadline = time.monotonic() + timeout_s
        with lock_path.open("a") as handle:
            while True:
                try:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise ClusterError(
                            f"another pytest process of this run held {lock_path} for over {timeout_s:.0f} s"
                        ) from None
                    time.sleep(0.05)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def once(self, name: str, work: Callable[[], Any], timeout_s: float = 600.0) -> Any:
        """Run `work` in exactly one process of the run; every process gets its JSON result.

        The others wait for it at most `timeout_s` (the work's own deadline, plus slack).
        """
        marker = self.path / f"{name}.done.json"
        with self.lock(name, timeout_s=timeout_s):
            if marker.exists():
                return json.loads(marker.read_text())
            result = work()
            write_json(marker, result)
            return result

    def write_part(self, kind: str, name: str, data: Any) -> Path:
        """A piece of a baseline being recorded (one nccl run, one DCGM report)."""
        target = self.path / "parts" / kind / f"{name}.json"
        write_json(target, data)
        return target

    def parts(self, kind: str) -> dict[str, Any]:
        folder = self.path / "parts" / kind
        if not folder.is_dir():
            return {}
        return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}
