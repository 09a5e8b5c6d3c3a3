"""The official Kubernetes client behind one door: retries, raw JSON, no secrets in errors.

Responses are read as JSON dicts (``_preload_content=False``), not as the client's
models: they are cheaper at a thousand objects and they are what the emulator and
the evidence keep. Transient failures (5xx, 429, resets, timeouts) are retried with
backoff; any other 4xx is raised at once with what was sent.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from acceptance.clusters.kube.settings import ApiRetry, KubeSettings
from acceptance.errors import ClusterError, KubeApiError

TRANSIENT = frozenset({429, 500, 502, 503, 504})
_BEARER = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]+")
_KEYED = re.compile(
    r"(?i)((?:token|client-key-data|client-certificate-data|password|authorization)[\"']?\s*[:=]\s*[\"']?)"
    r"(?!bearer\b|<redacted>)[^\s\"',}]+"
)


def redact(text: str) -> str:
    """Remove bearer tokens, keys and passwords from a message."""
    return _KEYED.sub(r"\1<redacted>", _BEARER.sub(r"\1<redacted>", text))


def api_error(what: str, status: int | None, message: str, sent: object = None) -> KubeApiError:
    """The error of an API call that failed for good: the call, status, the server's message, what was sent."""
    detail = f"{what}: " + (f"HTTP {status}: " if status else "") + message
    if sent is not None:
        shown = json.dumps(sent, sort_keys=True, default=str)
        detail += f" (sent: {shown[:2000]}{'...' if len(shown) > 2000 else ''})"
    return KubeApiError(redact(detail), status)


def build_api_client(settings: KubeSettings) -> Any:
    """An ApiClient from the profile's kubeconfig/context, or the in-cluster service account."""
    import yaml
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    try:
        if settings.kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
            cfg = client.Configuration()
            config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
            return client.ApiClient(cfg)
        return config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=settings.kubeconfig, context=settings.context
        )
    except (ConfigException, OSError, TypeError, ValueError, AttributeError, KeyError, yaml.YAMLError) as exc:
        where = settings.kubeconfig or "~/.kube/config"
        said = " ".join(str(exc).split())  # a YAML error spans lines: problem, then "in <file>, line N"
        if isinstance(exc, yaml.YAMLError):
            said = f"not valid YAML: {said}"
        raise ClusterError(redact(f"cannot load Kubernetes credentials from {where} "
                                  f"(context {settings.context or 'current'}): {said}")) from None  # fmt: skip


def _server_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, bytes):
        body = body.decode(errors="replace")
    if body:
        try:
            doc = json.loads(body)
            if isinstance(doc, dict) and doc.get("message"):
                return str(doc["message"])
        except ValueError:
            return str(body)[:500]
    return str(getattr(exc, "reason", "") or exc.__class__.__name__)


def bounded(timeout: tuple[float, float], left_s: float) -> tuple[float, float]:
    """A request's (connect, read) timeout, neither longer than `left_s` (at least a tenth of a second)."""
    cap = max(0.1, left_s)
    return (min(timeout[0], cap), min(timeout[1], cap))


def transient(exc: KubeApiError) -> bool:
    """Whether retrying the call may help: no answer at all, or a 5xx/429."""
    return exc.status is None or exc.status in TRANSIENT


def _without_hidden_retries(api_client: Any) -> None:
    """Make `call` the only retry policy: urllib3's default one retries a request three times on its own (each
    read timeout waited out again) and sleeps a 429's or 503's Retry-After for as long as the server asks, past
    the run's deadline and unseen by the profile's `api_retry`."""
    pool = getattr(getattr(api_client, "rest_client", None), "pool_manager", None)
    if pool is not None:
        pool.connection_pool_kw["retries"] = False
        pool.clear()  # pools made before this keep their own default


class KubeApi:
    """Calls with retries. `calls` counts requests made (for the benchmark and tests)."""

    def __init__(self, api_client: Any, retry: ApiRetry, sleep: Callable[[float], None] = time.sleep) -> None:
        from kubernetes import client

        self.client = api_client
        self.retry = retry
        _without_hidden_retries(api_client)
        self.sleep = sleep
        self.core = client.CoreV1Api(api_client)
        self.batch = client.BatchV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.version = client.VersionApi(api_client)
        self.apis = client.ApisApi(api_client)
        self.calls = 0
        self.retries = 0

    def close(self) -> None:
        """Close the client's connection pool (its worker threads with it)."""
        close = getattr(self.client, "close", None)
        if callable(close):
            close()

    def call(
        self,
        what: str,
        fn: Callable[..., Any],
        *args: Any,
        sent: object = None,
        on_conflict: Callable[[], Any] | None = None,
        until: float | None = None,
        attempts: int | None = None,
        **kwargs: Any,
    ) -> Any:
        """`fn(*args, **kwargs)` as raw JSON, retried while the failure is transient.

        `until` (a `time.monotonic()` instant): no retry starts after it, and no request waits past it.
        `attempts`: instead of the profile's (1: the caller retries in its own way).
        """
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        delay = self.retry.backoff_s
        most = attempts if attempts is not None else self.retry.attempts
        attempt = 0
        fixed_timeout = kwargs.pop("_request_timeout", None)
        while True:
            attempt += 1
            self.calls += 1
            try:
                timeout = fixed_timeout or self.retry.request_timeout
                if until is not None:
                    timeout = bounded(timeout, until - time.monotonic())
                resp = fn(*args, _preload_content=False, _request_timeout=timeout, **kwargs)
                data = resp.data
                return json.loads(data) if data else {}
            except ApiException as exc:
                status = int(exc.status or 0)
                if status == 409 and on_conflict is not None and attempt > 1:
                    return on_conflict()  # a retried create that had landed the first time
                wait = delay
                retry_after = (exc.headers or {}).get("Retry-After") if exc.headers else None
                if retry_after and str(retry_after).isdigit():
                    wait = max(wait, min(float(retry_after), self.retry.max_backoff_s))
                late = until is not None and time.monotonic() + wait >= until
                if status not in TRANSIENT or attempt >= most or late:
                    raise api_error(what, status, _server_message(exc), sent) from None
            except (HTTPError, OSError, ValueError) as exc:
                late = until is not None and time.monotonic() + delay >= until
                if attempt >= most or late:
                    raise api_error(what, None, f"{exc.__class__.__name__}: {exc}", sent) from None
                wait = delay
            self.retries += 1
            self.sleep(wait)
            delay = min(delay * 2, self.retry.max_backoff_s)

    def log(self, namespace: str, pod: str, tail_lines: int | None = None) -> str | None:
        """A pod's log, or None when it has none (never started, already gone: the API's 400 or 404).

        KubeApiError when the API kept failing (5xx, 429, connection errors past the retries): a log
        that could not be read is not an empty log.
        """
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        what = f"read log of pod {pod}"
        delay = self.retry.backoff_s
        for attempt in range(1, self.retry.attempts + 1):
            self.calls += 1
            try:
                kwargs: dict[str, Any] = {"tail_lines": tail_lines} if tail_lines is not None else {}
                resp: Any = self.core.read_namespaced_pod_log(
                    pod, namespace, _preload_content=False, _request_timeout=self.retry.request_timeout, **kwargs
                )
                return str(resp.data.decode(errors="replace"))
            except ApiException as exc:
                status = int(exc.status or 0)
                if status not in TRANSIENT:
                    return None
                if attempt == self.retry.attempts:
                    raise api_error(what, status, _server_message(exc)) from None
            except (HTTPError, OSError) as exc:
                if attempt == self.retry.attempts:
                    raise api_error(what, None, f"{exc.__class__.__name__}: {exc}") from None
            self.retries += 1
            self.sleep(delay)
            delay = min(delay * 2, self.retry.max_backoff_s)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def follow(self, namespace: str, pod: str, timeout_s: float) -> Iterator[str]:
        """A pod's log as it grows (``follow=true``), from its start, until the container ends, the pod goes,
        or `timeout_s` passes without output. KubeApiError when the stream cannot be opened or breaks: the
        caller reads the log again (no retries here: a follow is resumed by reading what is there)."""
        import codecs

        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        what = f"follow log of pod {pod}"
        self.calls += 1
        try:
            resp: Any = self.core.read_namespaced_pod_log(
                pod, namespace, follow=True, _preload_content=False,
                _request_timeout=(self.retry.request_timeout[0], max(1.0, timeout_s)),
            )  # fmt: skip
        except ApiException as exc:
            raise api_error(what, int(exc.status or 0), _server_message(exc)) from None
        except (HTTPError, OSError) as exc:
            raise api_error(what, None, f"{exc.__class__.__name__}: {exc}") from None
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        try:
            for data in resp.stream(65536):
                text = decoder.decode(data)
                if text:
                    yield text
        except (HTTPError, OSError) as exc:
            raise api_error(what, None, f"{exc.__class__.__name__}: {exc}") from None
        finally:
            resp.close()


def iter_watch(resp: Any) -> Iterator[Mapping[str, Any]]:
    """The JSON events of a watch response, one per line."""
    from kubernetes.watch.watch import iter_resp_lines

    for line in iter_resp_lines(resp):  # type: ignore[no-untyped-call]
        if line:
            yield json.loads(line)
