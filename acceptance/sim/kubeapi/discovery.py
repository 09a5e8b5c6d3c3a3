"""What the emulator's API serves besides objects: version, discovery documents, kubectl tables."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from acceptance.sim.kubeapi.store import Obj

SERVER_VERSION = {
    "major": "1",
    "minor": "30",
    "gitVersion": "v1.30.10-sim",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.22.12",
    "compiler": "gc",
    "platform": "linux/amd64",
}


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    name: str
    kind: str
    namespaced: bool
    verbs: tuple[str, ...]
    short: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


_RW = ("create", "delete", "deletecollection", "get", "list", "watch")
RESOURCES: tuple[Resource, ...] = (
    Resource("", "v1", "namespaces", "Namespace", False, ("create", "get", "list", "watch"), ("ns",)),
    Resource("", "v1", "nodes", "Node", False, ("get", "list", "watch"), ("no",)),
    Resource("", "v1", "pods", "Pod", True, _RW, ("po",)),
    Resource("", "v1", "events", "Event", True, ("get", "list", "watch"), ("ev",)),
    Resource("", "v1", "configmaps", "ConfigMap", True, _RW, ("cm",)),
    Resource("batch", "v1", "jobs", "Job", True, _RW),
    Resource("kubeflow.org", "v2beta1", "mpijobs", "MPIJob", True, _RW),
)
SUBRESOURCES = {"pods": ("log", "status"), "jobs": ("status",), "mpijobs": ("status",)}


def find(group: str, version: str, name: str) -> Resource | None:
    for res in RESOURCES:
        if (res.group, res.version, res.name) == (group, version, name):
            return res
    return None


def resource_list(group: str, version: str) -> Obj | None:
    found = [r for r in RESOURCES if (r.group, r.version) == (group, version)]
    if not found:
        return None
    items: list[Obj] = []
    for r in found:
        items.append({"name": r.name, "singularName": r.kind.lower(), "namespaced": r.namespaced,
                      "kind": r.kind, "verbs": list(r.verbs), "shortNames": list(r.short)})  # fmt: skip
        for sub in SUBRESOURCES.get(r.name, ()):
            items.append({"name": f"{r.name}/{sub}", "singularName": "", "namespaced": r.namespaced,
                          "kind": r.kind if sub == "status" else "Pod", "verbs": ["get"]})  # fmt: skip
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": found[0].api_version,
            "resources": items}  # fmt: skip


def api_versions(address: str) -> Obj:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}]}  # fmt: skip


def api_groups(mpi_operator: bool = True) -> Obj:
    groups = []
    for group, version in (("batch", "v1"), ("kubeflow.org", "v2beta1"))[: 2 if mpi_operator else 1]:
        gv = {"groupVersion": f"{group}/{version}", "version": version}
        groups.append({"name": group, "versions": [gv], "preferredVersion": gv})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def _age(stamp: str | None) -> str:
    if not stamp:
        return "<unknown>"
    then = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    seconds = int((datetime.now(UTC) - then).total_seconds())
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h"


def _status_cell(res: Resource, obj: Mapping[str, Any]) -> str:
    status = obj.get("status") or {}
    if res.name == "nodes":
        ready = [c for c in status.get("conditions") or () if c["type"] == "Ready"]
        text = "Ready" if ready and ready[0]["status"] == "True" else "NotReady"
        return text + (",SchedulingDisabled" if (obj.get("spec") or {}).get("unschedulable") else "")
    if res.name == "pods":
        for cs in status.get("containerStatuses") or ():
            waiting = cs.get("state", {}).get("waiting")
            if waiting:
                return str(waiting.get("reason", "Waiting"))
        return str(status.get("reason") or status.get("phase", ""))
    conds = [c["type"] for c in status.get("conditions") or () if c.get("status") == "True"]
    return conds[-1] if conds else ""


def table(res: Resource, items: list[Obj], rv: int) -> Obj:
    """A ``meta.k8s.io/v1`` Table, which is what kubectl asks for."""
    columns = [{"name": "Name", "type": "string", "format": "name", "description": "", "priority": 0},
               {"name": "Status", "type": "string", "format": "", "description": "", "priority": 0},
               {"name": "Age", "type": "string", "format": "", "description": "", "priority": 0}]  # fmt: skip
    rows = []
    for obj in items:
        meta = obj["metadata"]
        partial = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta}
        cells = [meta["name"], _status_cell(res, obj), _age(meta.get("creationTimestamp"))]
        rows.append({"cells": cells, "object": partial})
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": str(rv)},
            "columnDefinitions": columns, "rows": rows}  # fmt: skip
