"""Deleting what runs created: one selector finds it all (see `kube_manifests.run_labels`).

A run's own cleanup (`delete_run`) retries the API's transient failures with backoff until its
own deadline, each request bounded by what is left of it; what it could not delete it names.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from acceptance.clusters.kube.client import KubeApi, transient
from acceptance.clusters.kube.lease import lease_until
from acceptance.clusters.kube.manifests import MPI_API_VERSION, managed_selector
from acceptance.clusters.kube.settings import RUN_ID_KEY
from acceptance.clusters.kube.status import parse_time
from acceptance.errors import KubeApiError


@dataclass(frozen=True)
class Labelled:
    kind: str
    name: str
    run_id: str
    created: datetime | None
    lease_until: datetime | None = None  # on the run's lease object only

    def __str__(self) -> str:
        when = self.created.isoformat() if self.created else "?"
        return f"{self.kind}/{self.name} (run {self.run_id}, created {when})"


def _kinds(api: KubeApi, namespace: str) -> list[tuple[str, Callable[..., Any], Callable[..., Any], tuple[Any, ...]]]:
    """(kind, list, delete one, leading args) for every kind a run creates, owners first."""
    group, version = MPI_API_VERSION.split("/")
    return [
        ("MPIJob", api.custom.list_namespaced_custom_object, api.custom.delete_namespaced_custom_object,
         (group, version, namespace, "mpijobs")),
        ("Job", api.batch.list_namespaced_job, api.batch.delete_namespaced_job, (namespace,)),
        ("Pod", api.core.list_namespaced_pod, api.core.delete_namespaced_pod, (namespace,)),
        ("ConfigMap", api.core.list_namespaced_config_map, api.core.delete_namespaced_config_map, (namespace,)),
    ]  # fmt: skip


def list_labelled(api: KubeApi, namespace: str, selector: str | None = None) -> list[Labelled]:
    out: list[Labelled] = []
    for kind, lister, _, args in _kinds(api, namespace):
        try:
            doc = api.call(f"list {kind}", lister, *args, label_selector=selector or managed_selector())
        except KubeApiError as exc:
            if kind == "MPIJob" and exc.status == 404:
                continue  # no MPI operator CRD on this cluster
            raise
        out.extend(_labelled(kind, item) for item in doc.get("items") or ())
    return out


def _labelled(kind: str, item: dict[str, Any]) -> Labelled:
    meta = item.get("metadata") or {}
    return Labelled(kind, meta.get("name", ""), (meta.get("labels") or {}).get(RUN_ID_KEY, ""),
                    parse_time(meta.get("creationTimestamp")), lease_until(meta.get("annotations")))  # fmt: skip


def _delete_one(api: KubeApi, namespace: str, item: Labelled) -> bool:
    for kind, _, deleter, args in _kinds(api, namespace):
        if kind != item.kind:
            continue
        try:
            call_args = (*args, item.name) if kind == "MPIJob" else (item.name, namespace)
            api.call(f"delete {kind} {item.name}", deleter, *call_args, propagation_policy="Foreground")
            return True
        except KubeApiError as exc:
            if exc.status == 404:
                return False  # gone with its owner
            raise
    return False


def delete_labelled(api: KubeApi, namespace: str, items: Sequence[Labelled]) -> int:
    """Delete `items` (owners first, dependents go with them); the number actually deleted."""
    order = {"MPIJob": 0, "Job": 1, "Pod": 2, "ConfigMap": 3}
    return sum(_delete_one(api, namespace, i) for i in sorted(items, key=lambda i: order.get(i.kind, 9)))


CLEANUP_MAX_BACKOFF_S = 1.0  # a cleanup retries often: it has one deadline, and a few requests a second load no API
#: a cleanup request unanswered after this share of the cleanup's deadline (15 s of the default 60 s; never less
#: than CLEANUP_MIN_READ_S nor more than the profile's read timeout) is given up and sent again: with the
#: profile's 60 s read timeout, one request the API never answered took the whole deadline and left the objects
CLEANUP_READ_SHARE = 0.25
CLEANUP_MIN_READ_S = 1.0
SETTLE_POLL_S = 0.2  # deleted objects go when their dependents have (foreground deletion): look again this often


@dataclass(frozen=True)
class Cleanup:
    """What a run's cleanup left: objects still listed, kinds it could not list, the API error it ended on."""

    left: tuple[Labelled, ...] = ()
    unlisted: tuple[str, ...] = ()  # kinds no listing of succeeded: what is left of them is unknown
    error: str | None = None

    @property
    def complete(self) -> bool:
        return not self.left and not self.unlisted

    def describe(self) -> str:
        parts = [f"{len(self.left)} object(s) remain: {', '.join(map(str, self.left))}"] if self.left else []
        if self.unlisted:
            parts.append(f"could not list its {', '.join(self.unlisted)} objects")
        why = f" (last API error: {self.error})" if self.error else ""
        return "; ".join(parts) + why


class _Patient:
    """A cleanup's API calls: each retried while the failure is transient, until the cleanup's deadline."""

    def __init__(self, api: KubeApi, deadline_s: float, clock: Callable[[], float], sleep: Callable[[float], None]):
        self.api = api
        self.until = clock() + deadline_s
        self.clock = clock
        self.sleep = sleep
        self.error: str | None = None
        connect, read = api.retry.request_timeout
        self.request_timeout = (connect, min(read, max(CLEANUP_MIN_READ_S, CLEANUP_READ_SHARE * deadline_s)))

    def __call__(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        delay = self.api.retry.backoff_s
        while True:
            try:
                return self.api.call(what, fn, *args, until=self.until, attempts=1,
                                     _request_timeout=self.request_timeout, **kwargs)  # fmt: skip
            except KubeApiError as exc:
                self.error = str(exc)
                if not transient(exc) or self.clock() + delay >= self.until:
                    raise
            self.sleep(delay)
            delay = min(max(delay, 0.01) * 2, CLEANUP_MAX_BACKOFF_S)

    def pause(self) -> bool:
        """Wait a moment before looking again; False when the deadline leaves no time for it."""
        if self.clock() + SETTLE_POLL_S >= self.until:
            return False
        self.sleep(SETTLE_POLL_S)
        return True


def delete_run(
    api: KubeApi,
    namespace: str,
    selector: str,
    deadline_s: float = 60.0,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Cleanup:
    """Delete everything `selector` finds, kind by kind (owners first), within `deadline_s`.

    Every call is retried while the API fails transiently (5xx, 429, no answer), each request
    bounded by a share of the deadline and by what is left of it; a kind is done when a listing finds none of it.
    A failure that retrying cannot mend (403: not allowed) ends that kind at once.
    """
    call = _Patient(api, deadline_s, clock, sleep)
    left: list[Labelled] = []
    unlisted: list[str] = []
    for kind, lister, deleter, args in _kinds(api, namespace):
        items: list[Labelled] | None = None
        try:
            items = _listed(call, kind, lister, args, selector)
            while items:
                for item in items:
                    _delete(call, kind, deleter, args, namespace, item)
                if not call.pause():
                    break
                items = _listed(call, kind, lister, args, selector)
        except KubeApiError as exc:
            if kind == "MPIJob" and exc.status == 404 and items is None:
                continue  # no MPI operator CRD on this cluster
            if items is None:
                unlisted.append(kind)
        left.extend(items or ())
    return Cleanup(tuple(left), tuple(unlisted), call.error if left or unlisted else None)


def _listed(
    call: _Patient, kind: str, lister: Callable[..., Any], args: tuple[Any, ...], selector: str
) -> list[Labelled]:
    doc = call(f"list {kind}", lister, *args, label_selector=selector)
    return [_labelled(kind, item) for item in doc.get("items") or ()]


def _delete(
    call: _Patient, kind: str, deleter: Callable[..., Any], args: tuple[Any, ...], namespace: str, item: Labelled
) -> None:
    call_args = (*args, item.name) if kind == "MPIJob" else (item.name, namespace)
    try:
        call(f"delete {kind} {item.name}", deleter, *call_args, propagation_policy="Foreground")
    except KubeApiError as exc:
        if exc.status != 404:  # 404: gone with its owner
            raise


def older_than(items: Sequence[Labelled], seconds: float | None, now: datetime | None = None) -> list[Labelled]:
    if seconds is None:
        return list(items)
    now = now or datetime.now(UTC)
    return [i for i in items if i.created is None or (now - i.created).total_seconds() >= seconds]


def live_runs(items: Sequence[Labelled], now: datetime | None = None) -> dict[str, datetime]:
    """Run id → lease expiry, for the runs whose lease is still live."""
    now = now or datetime.now(UTC)
    return {i.run_id: i.lease_until for i in items if i.lease_until is not None and i.lease_until > now}
