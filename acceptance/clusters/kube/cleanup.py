"""Deleting what runs created: one selector finds it all (see `kube_manifests.run_labels`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from acceptance.clusters.kube.client import KubeApi, KubeApiError
from acceptance.clusters.kube.lease import lease_until
from acceptance.clusters.kube.manifests import MPI_API_VERSION, managed_selector
from acceptance.clusters.kube.settings import RUN_ID_KEY
from acceptance.clusters.kube.status import parse_time


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
        for item in doc.get("items") or ():
            meta = item.get("metadata") or {}
            out.append(Labelled(kind, meta.get("name", ""), (meta.get("labels") or {}).get(RUN_ID_KEY, ""),
                                parse_time(meta.get("creationTimestamp")),
                                lease_until(meta.get("annotations"))))  # fmt: skip
    return out


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


def delete_run(api: KubeApi, namespace: str, selector: str, settle_s: float = 10.0) -> list[Labelled]:
    """Delete everything `selector` finds; what is still there after `settle_s` (should be nothing)."""
    deadline = time.monotonic() + settle_s
    left = list_labelled(api, namespace, selector)
    while left:
        delete_labelled(api, namespace, left)
        left = list_labelled(api, namespace, selector)
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    return left


def older_than(items: Sequence[Labelled], seconds: float | None, now: datetime | None = None) -> list[Labelled]:
    if seconds is None:
        return list(items)
    now = now or datetime.now(UTC)
    return [i for i in items if i.created is None or (now - i.created).total_seconds() >= seconds]


def live_runs(items: Sequence[Labelled], now: datetime | None = None) -> dict[str, datetime]:
    """Run id → lease expiry, for the runs whose lease is still live."""
    now = now or datetime.now(UTC)
    return {i.run_id: i.lease_until for i in items if i.lease_until is not None and i.lease_until > now}
