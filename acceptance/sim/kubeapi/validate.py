"""Admission checks of the emulator: the fields the backend relies on, answered with 422 like kube-apiserver.

Only what a real API server (or the MPIJob CRD schema) rejects is rejected here; what
the MPI operator checks later (``Launcher`` key, replica counts) is the controller's
``ValidationError`` event, as on a real cluster.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from acceptance.sim.kubeapi.store import ApiError

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|Ki|Mi|Gi|Ti|Pi|M|G|T|P|E|Ei)?$")

KINDS = {"pods": ("Pod", ""), "jobs": ("Job", "batch"), "mpijobs": ("MPIJob", "kubeflow.org")}


class _Causes:
    def __init__(self) -> None:
        self.items: list[tuple[str, str, str]] = []  # (reason, field, message)

    def required(self, path: str) -> None:
        self.items.append(("FieldValueRequired", path, "Required value"))

    def invalid(self, path: str, value: object, why: str) -> None:
        self.items.append(("FieldValueInvalid", path, f"Invalid value: {_show(value)}: {why}"))

    def unsupported(self, path: str, value: object, allowed: list[str]) -> None:
        shown = ", ".join(f'"{a}"' for a in allowed)
        self.items.append(
            ("FieldValueNotSupported", path, f"Unsupported value: {_show(value)}: supported values: {shown}")
        )


def _show(value: object) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _metadata(obj: Mapping[str, Any], causes: _Causes) -> None:
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        causes.required("metadata")
        return
    name = meta.get("name")
    if not name:
        causes.required("metadata.name")
    elif not isinstance(name, str) or len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name):
        causes.invalid(
            "metadata.name", name, "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
            "characters, '-' or '.', and must start and end with an alphanumeric character",
        )  # fmt: skip
    for key, value in (meta.get("labels") or {}).items():
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
            causes.invalid(f"metadata.labels[{key}]", value, "a valid label must be an empty string or "
                           "consist of alphanumeric characters, '-', '_' or '.' (at most 63 characters)")  # fmt: skip


def _quantity(path: str, value: object, causes: _Causes) -> None:
    if _is_int(value):
        if isinstance(value, int) and value < 0:
            causes.invalid(path, value, "must be greater than or equal to 0")
        return
    if not isinstance(value, str) or not _QUANTITY.match(value):
        causes.invalid(path, value, "quantities must match the regular expression "
                       "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")  # fmt: skip


def _pod_spec(spec: object, path: str, causes: _Causes, restart: tuple[str, ...] | None) -> None:
    if not isinstance(spec, Mapping):
        causes.required(path)
        return
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        causes.required(f"{path}.containers")
        return
    for i, c in enumerate(containers):
        cpath = f"{path}.containers[{i}]"
        if not isinstance(c, Mapping):
            causes.invalid(cpath, c, "must be an object")
            continue
        if not c.get("name"):
            causes.required(f"{cpath}.name")
        elif not _DNS1123_LABEL.match(str(c["name"])):
            causes.invalid(f"{cpath}.name", c["name"], "a lowercase RFC 1123 label must consist of lower case "
                           "alphanumeric characters or '-'")  # fmt: skip
        if not c.get("image"):
            causes.required(f"{cpath}.image")
        for field in ("command", "args"):
            value = c.get(field)
            if value is not None and (not isinstance(value, list) or not all(isinstance(a, str) for a in value)):
                causes.invalid(f"{cpath}.{field}", value, "must be a list of strings")
        resources = c.get("resources") or {}
        requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
        for kind, amounts in (("requests", requests), ("limits", limits)):
            for name, value in amounts.items():
                _quantity(f"{cpath}.resources.{kind}[{name}]", value, causes)
        for name, value in requests.items():
            if "/" in name and not name.startswith("kubernetes.io/") and str(limits.get(name)) != str(value):
                causes.invalid(f"{cpath}.resources.requests[{name}]", value, f"must be equal to {name} limit")
    if restart is not None and spec.get("restartPolicy") not in restart:
        causes.unsupported(f"{path}.restartPolicy", spec.get("restartPolicy", ""), list(restart))


def _job(obj: Mapping[str, Any], causes: _Causes) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        causes.required("spec")
        return
    for field, minimum in (("backoffLimit", 0), ("activeDeadlineSeconds", 1), ("ttlSecondsAfterFinished", 0)):
        if field in spec and (not _is_int(spec[field]) or spec[field] < minimum):
            causes.invalid(f"spec.{field}", spec[field], f"must be greater than or equal to {minimum}")
    template = spec.get("template")
    if not isinstance(template, Mapping):
        causes.required("spec.template")
        return
    _pod_spec(template.get("spec"), "spec.template.spec", causes, ("OnFailure", "Never"))


def _mpijob(obj: Mapping[str, Any], causes: _Causes) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        causes.required("spec")
        return
    replicas = spec.get("mpiReplicaSpecs")
    if not isinstance(replicas, Mapping):
        causes.required("spec.mpiReplicaSpecs")
        return
    if "mpiImplementation" in spec and spec["mpiImplementation"] not in ("OpenMPI", "Intel", "MPICH"):
        causes.unsupported("spec.mpiImplementation", spec["mpiImplementation"], ["OpenMPI", "Intel", "MPICH"])
    if "slotsPerWorker" in spec and not _is_int(spec["slotsPerWorker"]):
        causes.invalid("spec.slotsPerWorker", spec["slotsPerWorker"], "must be of type integer")
    for field, value in (spec.get("runPolicy") or {}).items():
        if field in ("ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit") and not _is_int(value):
            causes.invalid(f"spec.runPolicy.{field}", value, "must be of type integer")
    for role, rspec in replicas.items():
        path = f"spec.mpiReplicaSpecs[{role}]"
        if not isinstance(rspec, Mapping):
            causes.invalid(path, rspec, "must be of type object")
            continue
        if "replicas" in rspec and not _is_int(rspec["replicas"]):
            causes.invalid(f"{path}.replicas", rspec["replicas"], "must be of type integer")
        template = rspec.get("template") or {}
        _pod_spec(template.get("spec"), f"{path}.template.spec", causes, None)


def validate(resource: str, obj: Mapping[str, Any]) -> None:
    """Raise a 422 ``Invalid`` ApiError naming every bad field, as kube-apiserver does."""
    causes = _Causes()
    _metadata(obj, causes)
    if resource == "jobs":
        _job(obj, causes)
    elif resource == "mpijobs":
        _mpijob(obj, causes)
    elif resource == "pods":
        _pod_spec(obj.get("spec"), "spec", causes, ("Always", "OnFailure", "Never"))
    if not causes.items:
        return
    kind, group = KINDS.get(resource, (resource, ""))
    name = (obj.get("metadata") or {}).get("name", "")
    qualified = f"{kind}.{group}" if group else kind
    joined = ", ".join(f"{path}: {msg}" for _, path, msg in causes.items)
    message = f'{qualified} "{name}" is invalid: ' + (f"[{joined}]" if len(causes.items) > 1 else joined)
    raise ApiError(
        422,
        "Invalid",
        message,
        {
            "name": name,
            "group": group,
            "kind": kind,
            "causes": [{"reason": r, "message": m, "field": p} for r, p, m in causes.items],
        },
    )
