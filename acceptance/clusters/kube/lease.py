"""A run's lease: one labelled ConfigMap whose annotation says until when the run is alive.

Renewed by every pytest process of the run that submits work (a PATCH every third of the
lease), deleted with the run's other objects. A run whose lease has expired crashed (or was
killed): its objects are leftovers; a run whose lease is live is another run using the
cluster now, and its objects are not removed unless asked.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

from acceptance.clusters.kube.client import KubeApi
from acceptance.clusters.kube.manifests import object_name, run_labels
from acceptance.clusters.kube.status import parse_time
from acceptance.errors import KubeApiError

LEASE_KEY = "recovery-acceptance/lease-until"
LEASE_WORKLOAD = "lease"


def lease_name(run_id: str) -> str:
    return object_name("ra-lease", run_id)


def lease_until(annotations: dict[str, Any] | None) -> datetime | None:
    return parse_time((annotations or {}).get(LEASE_KEY))


def _stamp(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Lease:
    """Holds the lease of run `run_id` in `namespace` while the process works for the run."""

    def __init__(self, api: KubeApi, namespace: str, run_id: str, seconds: float) -> None:
        self.api = api
        self.namespace = namespace
        self.run_id = run_id
        self.seconds = seconds
        self.name = lease_name(run_id)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _until(self) -> str:
        return _stamp(datetime.now(UTC) + timedelta(seconds=self.seconds))

    def hold(self) -> None:
        """Create (or take over) the lease and keep renewing it until `release`."""
        if self._thread is not None or self._stop.is_set():  # held already, or released for good
            return
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": run_labels(self.run_id, LEASE_WORKLOAD, LEASE_WORKLOAD),
                "annotations": {LEASE_KEY: self._until()},
            },
        }
        try:
            self.api.call(f"create lease {self.name}", self.api.core.create_namespaced_config_map, self.namespace,
                          body, sent=body)  # fmt: skip
        except KubeApiError as exc:
            if exc.status != 409:  # another process of the run made it: renew it
                raise
            self.renew()
        self._thread = threading.Thread(target=self._renew_until_stopped, name=f"lease-{self.run_id}", daemon=True)
        self._thread.start()

    def renew(self) -> None:
        patch = {"metadata": {"annotations": {LEASE_KEY: self._until()}}}
        self.api.call(f"renew lease {self.name}", self.api.core.patch_namespaced_config_map, self.name,
                      self.namespace, patch)  # fmt: skip

    def _renew_until_stopped(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            try:
                self.renew()
            except KubeApiError:
                continue  # retried next time; the lease lasts three renewals

    def release(self) -> None:
        """Stop renewing (the lease object goes with the run's other objects); waits once, 5 s at most, for a
        renewal in flight (its thread is a daemon: one stuck on an unanswered request does not hold the process)."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=5)
