"""List-then-watch feeds of the objects a run cares about, each on its own thread.

A feed lists once, then watches from the list's resourceVersion with bookmarks;
when the watch ends it resumes from the last version seen; on 410 Gone it lists
again; transient errors are retried with backoff. Everything it sees goes to one
queue as ``(resource, type, object)``; ``SYNC`` marks a fresh list.
"""

from __future__ import annotations

import contextlib
import queue
import socket
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from acceptance.clusters.kube.client import KubeApi, iter_watch
from acceptance.errors import KubeApiError

Item = tuple[str, str, Mapping[str, Any]]
WATCH_TIMEOUT_S = 30
WATCH_SLACK_S = 15


class Feed(threading.Thread):
    def __init__(
        self,
        api: KubeApi,
        resource: str,
        lister: Callable[..., Any],
        out: queue.Queue[Item],
        stop: threading.Event,
        **selector: Any,
    ) -> None:
        super().__init__(name=f"watch-{resource}", daemon=True)
        self.api = api
        self.resource = resource
        self.lister = lister
        self.selector = selector
        self.out = out
        self.stop = stop
        self.rv = ""
        self.error: str | None = None
        self.synced = threading.Event()
        self._resp: Any = None

    def relist(self) -> None:
        doc = self.api.call(f"list {self.resource}", self.lister, **self.selector)
        self.rv = str(doc.get("metadata", {}).get("resourceVersion", ""))
        for obj in doc.get("items") or ():
            self.out.put((self.resource, "SYNC", obj))
        self.out.put((self.resource, "SYNCED", {}))
        self.synced.set()

    def run(self) -> None:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        delay = self.api.retry.backoff_s
        try:
            self.relist()
        except KubeApiError as exc:
            self.error = str(exc)
            self.synced.set()
            return
        while not self.stop.is_set():
            gone = False
            try:
                self.api.calls += 1
                self._resp = self.lister(
                    **self.selector,
                    watch=True,
                    resource_version=self.rv,
                    allow_watch_bookmarks=True,
                    timeout_seconds=WATCH_TIMEOUT_S,
                    _preload_content=False,
                    # a watch that stops delivering (a black-holed connection) ends and is made again
                    _request_timeout=(
                        self.api.retry.connect_timeout_s,
                        min(WATCH_TIMEOUT_S + WATCH_SLACK_S, max(1.0, self.api.retry.read_timeout_s)),
                    ),
                )
                if self.stop.is_set():  # stopped while this request was made: `close` did not see its socket
                    self._release()
                    return
                for event in iter_watch(self._resp):
                    if self.stop.is_set():
                        break
                    kind, obj = event.get("type"), event.get("object") or {}
                    if kind == "ERROR":
                        gone = obj.get("code") == 410
                        break
                    rv = (obj.get("metadata") or {}).get("resourceVersion")
                    if rv:
                        self.rv = str(rv)
                    if kind != "BOOKMARK":
                        self.out.put((self.resource, str(kind), obj))
                delay = self.api.retry.backoff_s
            except ApiException as exc:
                gone = exc.status == 410
                if not gone:
                    self._backoff(delay)
                    delay = min(delay * 2, self.api.retry.max_backoff_s)
            except (HTTPError, OSError, ValueError, AttributeError):
                # AttributeError: urllib3 reading a stream whose socket `close` shut down
                if self.stop.is_set():
                    return
                self._backoff(delay)
                delay = min(delay * 2, self.api.retry.max_backoff_s)
            if gone and not self.stop.is_set():
                try:
                    self.relist()
                except KubeApiError as exc:
                    self.error = str(exc)
                    return

    def _backoff(self, seconds: float) -> None:
        self.api.retries += 1
        self.stop.wait(seconds)

    def end(self, timeout_s: float) -> bool:
        """Stop the watch and wait up to `timeout_s` for its thread to end (a thread still in a TLS read when the
        interpreter exits aborts the process); True when it ended."""
        self.stop.set()
        deadline = time.monotonic() + timeout_s
        while self.is_alive() and time.monotonic() < deadline:
            self.close()  # again: a request made since the last close has a socket of its own
            self.join(min(0.2, max(0.0, deadline - time.monotonic())))
        return not self.is_alive()

    def _release(self) -> None:
        """Close the watch's response from this thread: its socket is closed, not only shut down (a response
        left open kept its socket until the garbage collector found it, a ResourceWarning in whatever ran then)."""
        with contextlib.suppress(OSError):
            self._resp.close()

    def close(self) -> None:
        """End the watch now: shut its socket down (closing it would wait for the reading thread)."""
        sock = getattr(getattr(self._resp, "connection", None), "sock", None)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
