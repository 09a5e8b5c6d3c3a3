"""A Prometheus HTTP API client on urllib3 (the transport the Kubernetes client already brings).

POST form requests (a node regex for 1000 nodes does not fit in a URL), one deadline for the
whole collection and a timeout per request, retries with backoff only for what is transient
(connection errors, 429, 502-504), and a `QueryFailed` carrying the query and the answer for
anything else: the verdict shows them.
"""

from __future__ import annotations

import json
import os
import ssl
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import urllib3

from acceptance.errors import QueryFailed
from acceptance.metrics.base import QueryStats
from acceptance.metrics.settings import PrometheusSettings

TRANSIENT = frozenset({429, 502, 503, 504})


def _unix(when: datetime) -> str:
    return f"{when.timestamp():.3f}"


class PrometheusClient:
    """`/api/v1/query`, `/api/v1/query_range` and `/api/v1/series` of one Prometheus."""

    def __init__(
        self, settings: PrometheusSettings, stats: QueryStats | None = None, environ: Mapping[str, str] | None = None
    ) -> None:
        self.settings = settings
        self.stats = stats or QueryStats()
        self.headers = settings.headers(os.environ if environ is None else environ)
        self.deadline = time.monotonic() + settings.deadline_s
        kwargs: dict[str, Any] = {}
        if settings.url.startswith("https"):
            if settings.insecure_skip_verify:
                kwargs["cert_reqs"] = ssl.CERT_NONE
            else:
                kwargs["cert_reqs"] = ssl.CERT_REQUIRED
                if settings.ca_file is not None:
                    kwargs["ca_certs"] = str(settings.ca_file)
            if settings.client_cert is not None:
                kwargs["cert_file"] = str(settings.client_cert)
                kwargs["key_file"] = str(settings.client_key) if settings.client_key else None
        self.pool = urllib3.PoolManager(num_pools=2, maxsize=2, retries=False, **kwargs)

    def describe(self) -> str:
        auth = self.headers.get("Authorization", "").split(" ", 1)[0].lower() or "no"
        return f"Prometheus at {self.settings.url} ({auth} auth)"

    def close(self) -> None:
        self.pool.clear()

    def _post(self, path: str, fields: dict[str, str], shown: str) -> Any:
        delay = 0.5
        while True:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise QueryFailed(shown, f"no answer within the deadline of {self.settings.deadline_s:g} s")
            timeout = urllib3.Timeout(connect=min(10.0, left), read=min(self.settings.timeout_s, left))
            started = time.monotonic()
            try:
                answer = self.pool.request(
                    "POST",
                    self.settings.url + path,
                    fields=fields,
                    headers=self.headers,
                    encode_multipart=False,
                    timeout=timeout,
                )
            except urllib3.exceptions.SSLError as exc:  # a certificate that does not verify will not get better
                self.stats.seconds += time.monotonic() - started
                raise QueryFailed(shown, f"TLS: {exc}") from None
            except urllib3.exceptions.HTTPError as exc:
                self.stats.seconds += time.monotonic() - started
                if time.monotonic() + delay >= self.deadline:
                    raise QueryFailed(shown, f"{type(exc).__name__}: {exc}") from None
                time.sleep(delay)
                delay = min(delay * 2, 8.0)
                continue
            self.stats.seconds += time.monotonic() - started
            self.stats.queries += 1
            self.stats.bytes += len(answer.data)
            self.stats.log.append(shown)
            if answer.status in TRANSIENT and time.monotonic() + delay < self.deadline:
                time.sleep(delay)
                delay = min(delay * 2, 8.0)
                continue
            return self._data(answer, shown)

    def _data(self, answer: urllib3.BaseHTTPResponse, shown: str) -> Any:
        text = answer.data.decode("utf-8", "replace")
        try:
            doc = json.loads(text)
        except json.JSONDecodeError:
            raise QueryFailed(shown, f"HTTP {answer.status}: {text[:300]!r} (not a Prometheus API answer)") from None
        if answer.status != 200 or not isinstance(doc, dict) or doc.get("status") != "success":
            said = doc.get("error") if isinstance(doc, dict) else None
            kind = doc.get("errorType") if isinstance(doc, dict) else None
            raise QueryFailed(shown, f"HTTP {answer.status} {kind or ''}: {said or text[:300]}".strip())
        return doc.get("data")

    def query(self, promql: str, at: datetime) -> list[dict[str, Any]]:
        """An instant query: its vector (or the matrix of a range selector)."""
        data = self._post("/api/v1/query", {"query": promql, "time": _unix(at)}, f"{promql} @ {at.isoformat()}")
        result = list(data.get("result") or [])
        self.stats.points += sum(len(r.get("values") or ()) or 1 for r in result)
        return result

    def query_range(self, promql: str, start: datetime, end: datetime, step_s: float) -> list[dict[str, Any]]:
        shown = f"{promql} [{start.isoformat()} .. {end.isoformat()} step {step_s:g}s]"
        data = self._post(
            "/api/v1/query_range",
            {"query": promql, "start": _unix(start), "end": _unix(end), "step": f"{step_s:g}"},
            shown,
        )
        result = list(data.get("result") or [])
        self.stats.points += sum(len(r.get("values") or ()) for r in result)
        return result

    def series(self, match: str, start: datetime, end: datetime) -> list[dict[str, str]]:
        shown = f"series {match} [{start.isoformat()} .. {end.isoformat()}]"
        data = self._post("/api/v1/series", {"match[]": match, "start": _unix(start), "end": _unix(end)}, shown)
        return list(data or [])
