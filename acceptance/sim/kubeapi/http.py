"""The HTTP side of the Kubernetes API emulator: routing, list/get/create/delete, logs, watches.

Requests are answered from the `EmulatedApi` (``server.py``) they are served for;
watches stream its store's changes from a resourceVersion (chunked JSON lines, with
bookmarks, ``ERROR`` 410 when the version is too old, and early ends when asked to).
"""

from __future__ import annotations

import json
import select
import socket
import ssl
import time
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

from acceptance.sim.kubeapi import discovery as disc
from acceptance.sim.kubeapi.faults import Faults, request_kind
from acceptance.sim.kubeapi.store import ApiError, Gone, Obj, Store, parse_field_selector, parse_label_selector


class LogKeeper(Protocol):
    """The part of the controller a followed pod log reads: each pod's log so far, by (namespace, name)."""

    @property
    def logs(self) -> Mapping[tuple[str, str], str]: ...


class Api(Protocol):
    """What the handler asks of the API it serves (`server.EmulatedApi` is the one)."""

    token: str
    address: str
    mpi_operator: bool

    @property
    def faults(self) -> Faults: ...

    @property
    def store(self) -> Store: ...

    @property
    def controller(self) -> LogKeeper: ...

    def count(self, verb: str) -> None: ...

    def audit(self, verb: str, group: str, resource: str, namespace: str | None) -> None: ...

    def inject(self, rate: float, parts: list[str]) -> bool: ...

    def hold_unanswered(self, seconds: float) -> None: ...

    def inject_gone(self) -> bool: ...

    def rng_choice(self, options: Sequence[int]) -> int: ...

    def rng_uniform(self, low: float, high: float) -> float: ...

    def create(self, res: disc.Resource, namespace: str | None, body: Obj) -> Obj: ...

    def merge_patch(self, res: disc.Resource, namespace: str, name: str, patch: Obj) -> Obj: ...

    def delete(self, res: disc.Resource, namespace: str, name: str, policy: str) -> Obj: ...

    def delete_collection(
        self, res: disc.Resource, namespace: str | None, query: dict[str, str], policy: str
    ) -> Obj: ...

    def pod_log(self, namespace: str, name: str, query: dict[str, str]) -> str: ...


MAX_WATCH_S = 1800.0
BLACKHOLE_S = 600.0  # a black-holed request is held this long at most (or until the emulator stops)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    api: Api


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # header and body are separate writes: no 40 ms delayed-ACK stalls
    server: Server
    _drained = False

    def log_message(self, format: str, *args: Any) -> None:
        return

    # ------------------------------------------------------------ plumbing

    def _send_json(self, code: int, body: Obj) -> None:
        data = json.dumps(body, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if code == 429:
            self.send_header("Retry-After", str(self.server.api.faults.retry_after_s))
        self.end_headers()
        self.wfile.write(data)

    def _send_text(self, text: str) -> None:
        data = text.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> Obj:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length and not self._drained else b""
        self._drained = True
        if not raw:
            return {}
        try:
            body = json.loads(raw)
        except ValueError as exc:
            raise ApiError(400, "BadRequest", f"the body of the request was in an unknown format: {exc}") from None
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "the body of the request must be an object")
        return body

    def _handle(self, method: str) -> None:
        api = self.server.api
        api.count(method)
        self._drained = False
        try:
            url = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(url.query).items()}
            if api.token and self.headers.get("Authorization") != f"Bearer {api.token}":
                raise ApiError(401, "Unauthorized", "Unauthorized")
            parts = [p for p in url.path.split("/") if p]
            if api.faults.latency_s:
                time.sleep(api.faults.latency_s)
            if api.inject(api.faults.cut_rate, parts):
                self.close_connection = True
                return  # no status line: the client sees the connection end
            if api.inject(api.faults.blackhole_rate, parts):
                self.close_connection = True
                api.hold_unanswered(BLACKHOLE_S)
                return
            if api.inject(api.faults.error_rate, parts):
                code = api.rng_choice((500, 503, 429))
                reason = {500: "InternalError", 503: "ServiceUnavailable", 429: "TooManyRequests"}[code]
                raise ApiError(code, reason, f"injected fault: {reason} (emulator)")
            if api.faults.refused and (kind := request_kind(method, parts)) in api.faults.refused:
                raise ApiError(503, "ServiceUnavailable", f"injected fault: {kind} refused (emulator)")
            self._route(method, parts, query)
        except ApiError as exc:
            if method != "GET" or "watch" not in self.path:
                self._drain()
            self._send_json(exc.code, exc.status())
        except (BrokenPipeError, ConnectionResetError):
            return

    def _drain(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length and not self._drained:
            self.rfile.read(length)
        self._drained = True

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    # ------------------------------------------------------------ routing

    def _route(self, method: str, parts: list[str], query: dict[str, str]) -> None:
        api = self.server.api
        if method == "GET" and parts in (["version"], ["api"], ["apis"]):
            doc = {
                "version": disc.SERVER_VERSION,
                "api": disc.api_versions(api.address),
                "apis": disc.api_groups(mpi_operator=api.mpi_operator),
            }
            self._send_json(200, doc[parts[0]])
            return
        if parts[:1] == ["api"] and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if group == "kubeflow.org" and not api.mpi_operator:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if not rest:
            listing = disc.resource_list(group, version)
            if listing is None or method != "GET":
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            self._send_json(200, listing)
            return
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        res = disc.find(group, version, rest[0])
        if res is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if res.namespaced and name is not None and namespace is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        api.audit(_rbac_verb(method, name, query), group, f"{res.name}/{sub}" if sub else res.name, namespace)
        if method == "GET":
            if name is None:
                self._list_or_watch(res, namespace, query)
            elif sub == "log" and res.name == "pods" and query.get("follow") in ("true", "1"):
                self._follow_log(namespace or "", name, query)
            elif sub == "log" and res.name == "pods":
                self._send_text(api.pod_log(namespace or "", name, query))
            else:
                self._send_json(200, api.store.require(res.name, namespace or "", name))
        elif method == "POST" and name is None:
            self._send_json(201, api.create(res, namespace, self._body()))
        elif method == "PATCH" and name is not None and sub is None:
            self._send_json(200, api.merge_patch(res, namespace or "", name, self._body()))
        elif method == "DELETE":
            body = self._body()
            policy = query.get("propagationPolicy") or body.get("propagationPolicy") or "Background"
            if name is None:
                self._send_json(200, api.delete_collection(res, namespace, query, policy))
            else:
                self._send_json(200, api.delete(res, namespace or "", name, policy))
        else:
            raise ApiError(405, "MethodNotAllowed", f"the server does not allow this method on {res.name}")

    def _list_or_watch(self, res: disc.Resource, namespace: str | None, query: dict[str, str]) -> None:
        api = self.server.api
        labels = parse_label_selector(query.get("labelSelector"))
        fields = parse_field_selector(query.get("fieldSelector"))
        if query.get("watch") in ("true", "1"):
            self._watch(res, namespace, labels, fields, query)
            return
        items, rv = api.store.list(res.name, namespace, labels, fields)
        if "as=Table" in (self.headers.get("Accept") or ""):
            self._send_json(200, disc.table(res, items, rv))
            return
        self._send_json(200, {"kind": f"{res.kind}List", "apiVersion": res.api_version,
                              "metadata": {"resourceVersion": str(rv)}, "items": items})  # fmt: skip

    def _client_gone(self) -> bool:
        """The client hung up (a watch it stopped reading): end now rather than at timeoutSeconds."""
        sock = self.connection
        if isinstance(sock, ssl.SSLSocket):
            return False  # no MSG_PEEK on TLS sockets; the next write notices
        try:
            readable, _, _ = select.select([sock], [], [], 0)
            return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def _chunk(self, event: Obj) -> None:
        data = json.dumps(event, separators=(",", ":")).encode() + b"\n"
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _follow_log(self, namespace: str, name: str, query: dict[str, str]) -> None:
        """``GET .../log?follow=true``: the log as the container prints it, until it ends or the pod goes."""
        api = self.server.api
        first = api.pod_log(namespace, name, query)  # the errors of a plain read (a pod not started yet)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        sent = 0
        text = first
        try:
            while True:
                if len(text) > sent:
                    data = text[sent:].encode()
                    self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                    self.wfile.flush()
                    sent = len(text)
                pod = api.store.get("pods", namespace, name)
                if pod is None or pod["status"].get("phase") != "Running" or api.store.stopped or self._client_gone():
                    if pod is not None and (namespace, name) in api.controller.logs:
                        rest = api.controller.logs[(namespace, name)][sent:].encode()
                        if rest:
                            self.wfile.write(f"{len(rest):x}\r\n".encode() + rest + b"\r\n")
                    break
                time.sleep(0.02)
                try:
                    text = api.pod_log(namespace, name, {})
                except ApiError:
                    break
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return

    def _watch(
        self, res: disc.Resource, namespace: str | None, labels: Any, fields: Any, query: dict[str, str]
    ) -> None:
        api, store = self.server.api, self.server.api.store
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        timeout = min(float(query.get("timeoutSeconds") or MAX_WATCH_S), MAX_WATCH_S)
        if api.faults.watch_drop_s:
            timeout = min(timeout, api.rng_uniform(0.01, api.faults.watch_drop_s))
        end_at = time.monotonic() + timeout
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
        lag = api.faults.pod_update_lag_s if res.name == "pods" else 0.0
        start = query.get("resourceVersion") or ""

        def wanted(obj: Obj) -> bool:
            meta = obj["metadata"]
            return bool((namespace is None or meta.get("namespace") == namespace) and \
                labels(meta.get("labels") or {}) and fields(obj))  # fmt: skip

        try:
            if start in ("", "0"):
                items, rv = store.list(res.name, namespace, labels, fields)
                for obj in items:
                    self._chunk({"type": "ADDED", "object": obj})
            else:
                rv = int(start)
                if api.inject_gone():
                    raise Gone(rv, store.oldest_rv())
            while time.monotonic() < end_at and not store.stopped:
                with store.cond:
                    if store.rv <= rv:
                        store.cond.wait(min(1.0, max(0.0, end_at - time.monotonic())))
                if self._client_gone():
                    return
                for change in store.changes_since(rv):
                    due = change.at + lag if change.resource == res.name and change.type == "MODIFIED" else 0.0
                    if due > time.monotonic():  # a lagging stream: hold this change (and all after it) back
                        time.sleep(max(0.0, min(due, end_at) - time.monotonic()))
                        break
                    rv = change.rv
                    if change.resource == res.name and wanted(change.obj):
                        self._chunk({"type": change.type, "object": change.obj})
            if bookmarks:
                self._chunk({"type": "BOOKMARK", "object": {"kind": res.kind, "apiVersion": res.api_version,
                                                            "metadata": {"resourceVersion": str(rv)}}})  # fmt: skip
        except ApiError as exc:
            self._chunk({"type": "ERROR", "object": exc.status()})
        except (BrokenPipeError, ConnectionResetError):
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def _rbac_verb(method: str, name: str | None, query: dict[str, str]) -> str:
    """The verb Kubernetes RBAC checks for a request."""
    if method == "GET":
        if name is not None:
            return "get"
        return "watch" if query.get("watch") in ("true", "1") else "list"
    if method == "DELETE":
        return "delete" if name is not None else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())
