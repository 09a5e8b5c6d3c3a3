"""A watch's thread ends with its wait, even when the wait ends while the thread is making a new request.

A suite run once exited with SIGABRT after its summary (exit status -6, no message): a watch thread, left
in a TLS read of a request it had started as the wait ended, took the GIL back during the interpreter's
finalization (core dump: PyEval_RestoreThread -> PyThread_exit_thread -> abort, from watch.py's request).
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from acceptance.clusters.kube.cluster import KubeCluster
from acceptance.clusters.kube.watch import Feed, Item
from acceptance.sim.kubeapi import EmulatedApi
from tests.kube_tool_double import CannedRunner
from tests.test_kube_e2e import SETTINGS


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


def _connections_to(port: int) -> int:
    """How many of this process's open sockets are TCP connections to `port` (its fds against /proc/net/tcp*)."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # an fd closed since the listing
            continue
        if target.startswith("socket:["):
            inodes.add(target.removeprefix("socket:[").removesuffix("]"))
    found = 0
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[2].rsplit(":", 1)[1], 16) == port and fields[9] in inodes:
                found += 1
    return found


def test_a_watch_stopped_while_its_request_was_made_closes_its_connection() -> None:
    """Before: the response of that request was left open with its socket only shut down; the socket stayed
    until the garbage collector found it (a ResourceWarning in a later test of a loaded run), and the emulator's
    exit waited on the watch for its 30 s timeout."""
    with EmulatedApi(CannedRunner(), time_scale=1.0) as emulator:
        kube = KubeCluster(SETTINGS, "watch-end", emulator.api_client())
        port = int(kube.api.client.configuration.host.rsplit(":", 1)[1])
        stop = threading.Event()
        lister = kube.api.core.list_namespaced_config_map

        def stopped_during_the_watch_request(**selector: Any) -> Any:
            response = lister(**selector)
            if selector.get("watch"):
                stop.set()  # the wait ended while this request was on its way
            return response

        feed = Feed(kube.api, "configmaps", stopped_during_the_watch_request, queue.Queue(), stop,
                    namespace=SETTINGS.namespace)  # fmt: skip
        feed.start()
        feed.join(10.0)  # it lists, makes the watch request, finds itself stopped and ends
        assert not feed.is_alive()
        assert feed.error is None
        kube.api.close()  # the pool's idle connections (the list's)
        assert _connections_to(port) == 0
