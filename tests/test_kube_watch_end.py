"""A watch's thread ends with its wait, even when the wait ends while the thread is making a new request.

A suite run once exited with SIGABRT after its summary (exit status -6, no message): a watch thread, left
in a TLS read of a request it had started as the wait ended, took the GIL back during the interpreter's
finalization (core dump: PyEval_RestoreThread -> PyThread_exit_thread -> abort, from watch.py's request).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

from acceptance.clusters.kube.watch import Feed, Item


class EndlessStream:
    """A watch response that delivers nothing for a long time, with no socket `Feed.close` could shut down."""

    connection = None

    def __init__(self) -> None:
        self.read = threading.Event()

    def stream(self, amt: Any = None, decode_content: bool = False) -> Iterator[bytes]:
        del amt, decode_content
        self.read.set()
        threading.Event().wait(30)
        yield b""


class ListerHeldInRequest:
    """Lists at once; a watch request returns only when let go (the request is on its way when the wait ends)."""

    def __init__(self) -> None:
        self.in_request = threading.Event()
        self.go = threading.Event()
        self.response = EndlessStream()

    def __call__(self, **selector: Any) -> Any:
        if not selector.get("watch"):
            return {"metadata": {"resourceVersion": "7"}, "items": []}
        self.in_request.set()
        self.go.wait(10)
        return self.response


def _api() -> Any:
    retry = SimpleNamespace(backoff_s=0.05, max_backoff_s=0.2, connect_timeout_s=1.0, read_timeout_s=5.0)
    return SimpleNamespace(call=lambda what, fn, **kw: fn(**kw), calls=0, retries=0, retry=retry)


def test_a_watch_stopped_while_its_request_is_made_ends_without_reading_it() -> None:
    lister = ListerHeldInRequest()
    out: queue.Queue[Item] = queue.Queue()
    stop = threading.Event()
    feed = Feed(_api(), "pods", lister, out, stop)
    feed.start()
    assert lister.in_request.wait(5)
    stop.set()
    feed.close()  # the wait's end: nothing to shut down yet, the request has no response
    lister.go.set()
    feed.join(2.0)
    assert not feed.is_alive(), "the watch thread outlived its wait, reading a response nobody wants"
    assert not lister.response.read.is_set()
    assert [kind for _, kind, _ in list(out.queue)] == ["SYNCED"]


def test_end_is_bounded_for_a_thread_that_does_not_stop() -> None:
    lister = ListerHeldInRequest()
    feed = Feed(_api(), "pods", lister, queue.Queue(), threading.Event())
    feed.start()
    assert lister.in_request.wait(5)
    assert not feed.end(0.3)  # still held in its request: end gives up at its bound
    lister.go.set()
    assert feed.end(2.0)
