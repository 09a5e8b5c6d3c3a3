"""The emulator's object store: resourceVersions, selectors, watch history, ownership.

Objects are plain dicts that are never changed once stored (an update stores a new
dict), so watch history and readers can share them without copying.
"""

from __future__ import annotations

import builtins
import copy
import itertools
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

Obj = dict[str, Any]
Key = tuple[str, str, str]  # (resource, namespace, name)

CLUSTER_SCOPED = frozenset({"nodes", "namespaces"})


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ApiError(Exception):
    """An API answer other than success, rendered as a ``Status`` object."""

    def __init__(self, code: int, reason: str, message: str, details: Mapping[str, Any] | None = None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = dict(details or {})

    def status(self) -> Obj:
        out: Obj = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            out["details"] = self.details
        return out


class Gone(ApiError):
    def __init__(self, rv: int, oldest: int):
        super().__init__(410, "Expired", f"too old resource version: {rv} ({oldest})")


def not_found(resource: str, name: str) -> ApiError:
    group_kind = {"jobs": "jobs.batch", "mpijobs": "mpijobs.kubeflow.org"}.get(resource, resource)
    return ApiError(404, "NotFound", f'{group_kind} "{name}" not found', {"name": name, "kind": resource})


# ---------------------------------------------------------------- selectors

_SET_EXPR = re.compile(r"^\s*(!?)([A-Za-z0-9./_-]+)\s*(?:(in|notin)\s*\(([^)]*)\))?\s*$")


def _split_selector(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


Predicate = Callable[[Mapping[str, str]], bool]
FieldPredicate = Callable[[Mapping[str, Any]], bool]


def _label_requirement(key: str, op: str, values: frozenset[str]) -> Predicate:
    def check(labels: Mapping[str, str]) -> bool:
        if op == "=":
            return labels.get(key) == next(iter(values))
        if op == "!=":
            return labels.get(key) != next(iter(values))
        if op == "in":
            return labels.get(key) in values
        if op == "notin":
            return labels.get(key) not in values
        if op == "exists":
            return key in labels
        return key not in labels

    return check


def parse_label_selector(text: str | None) -> Predicate:
    """``a=b,c!=d,e in (x,y),f notin (z),g,!h`` → predicate over a label map."""
    if not text:
        return lambda labels: True
    preds: list[Predicate] = []
    for part in _split_selector(text):
        for op in ("!=", "==", "="):
            if op in part and "(" not in part:
                key, value = (s.strip() for s in part.split(op, 1))
                preds.append(_label_requirement(key, "!=" if op == "!=" else "=", frozenset({value})))
                break
        else:
            match = _SET_EXPR.match(part)
            if not match:
                raise ApiError(400, "BadRequest", f"unable to parse requirement: {part!r}")
            neg, key, setop, values = match.groups()
            if setop:
                allowed = frozenset(v.strip() for v in values.split(",") if v.strip())
                preds.append(_label_requirement(key, setop, allowed))
            else:
                preds.append(_label_requirement(key, "absent" if neg else "exists", frozenset()))
    return lambda labels: all(p(labels) for p in preds)


def field_value(obj: Mapping[str, Any], path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(part, "")
    return "" if cur is None else str(cur)


def _field_requirement(path: str, value: str, equal: bool) -> FieldPredicate:
    return lambda obj: (field_value(obj, path) == value) == equal


def parse_field_selector(text: str | None) -> FieldPredicate:
    if not text:
        return lambda obj: True
    preds: list[FieldPredicate] = []
    for part in _split_selector(text):
        if "!=" in part:
            path, value = (x.strip() for x in part.split("!=", 1))
            preds.append(_field_requirement(path, value, False))
        elif "=" in part:
            path, value = (x.strip() for x in part.replace("==", "=").split("=", 1))
            preds.append(_field_requirement(path, value, True))
        else:
            raise ApiError(400, "BadRequest", f"invalid field selector: {part!r}")
    return lambda obj: all(p(obj) for p in preds)


# ---------------------------------------------------------------- store


def _copy_for_update(obj: Obj) -> Obj:
    """A copy a mutator may change: metadata and status deeply; other sections one level deep.

    Mutators replace keys of ``spec`` (``nodeName``, ``taints``), never edit inside them, so the
    big shared parts of a pod spec (a 1024-node affinity list) are not copied on every update.
    """
    new: Obj = {}
    for key, value in obj.items():
        if key in ("metadata", "status"):
            new[key] = copy.deepcopy(value)
        elif isinstance(value, dict):
            new[key] = dict(value)
        else:
            new[key] = value
    return new


@dataclass(frozen=True)
class Change:
    rv: int
    type: str  # ADDED MODIFIED DELETED
    resource: str
    obj: Obj
    at: float = field(default_factory=time.monotonic)  # when it was made (a lagging watch delivers it later)


class Store:
    """All objects of the emulated cluster, behind one condition variable."""

    def __init__(self, history: int = 200_000) -> None:
        self.cond = threading.Condition()
        self._objects: dict[str, dict[Key, Obj]] = {}
        self._by_owner: dict[str, set[Key]] = {}
        self._uids: set[str] = set()  # of the objects stored now: an owner reference to any other is dangling
        self._rv = itertools.count(1)
        self.rv = 0
        self._history: deque[Change] = deque(maxlen=history)
        self.listeners: list[Callable[[Change], None]] = []
        self.stopped = False

    @staticmethod
    def key(resource: str, namespace: str, name: str) -> Key:
        return (resource, "" if resource in CLUSTER_SCOPED else namespace, name)

    def _record(self, kind: str, resource: str, obj: Obj) -> Change:
        change = Change(self.rv, kind, resource, obj)
        self._history.append(change)
        self.cond.notify_all()
        return change

    def _next_rv(self) -> int:
        self.rv = next(self._rv)
        return self.rv

    def _notify(self, changes: Iterable[Change]) -> None:
        for change in changes:
            for listener in self.listeners:
                listener(change)

    def get(self, resource: str, namespace: str, name: str) -> Obj | None:
        with self.cond:
            return self._objects.get(resource, {}).get(self.key(resource, namespace, name))

    def require(self, resource: str, namespace: str, name: str) -> Obj:
        obj = self.get(resource, namespace, name)
        if obj is None:
            raise not_found(resource, name)
        return obj

    def list(
        self,
        resource: str,
        namespace: str | None = None,
        labels: Predicate | None = None,
        fields: FieldPredicate | None = None,
    ) -> tuple[builtins.list[Obj], int]:
        with self.cond:
            items = [
                obj
                for (_, ns, _), obj in self._objects.get(resource, {}).items()
                if (namespace is None or ns == namespace)
                and (labels is None or labels(obj["metadata"].get("labels") or {}))
                and (fields is None or fields(obj))
            ]
            return items, self.rv

    def create(self, resource: str, obj: Obj) -> Obj:
        meta = obj.setdefault("metadata", {})
        key = self.key(resource, meta.get("namespace", ""), meta["name"])
        with self.cond:
            table = self._objects.setdefault(resource, {})
            if key in table:
                raise ApiError(
                    409,
                    "AlreadyExists",
                    f'{resource} "{meta["name"]}" already exists',
                    {"name": meta["name"]},
                )
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now_iso()
            meta["resourceVersion"] = str(self._next_rv())
            meta.setdefault("generation", 1)
            table[key] = obj
            self._uids.add(meta["uid"])
            owners = [ref["uid"] for ref in meta.get("ownerReferences") or ()]
            for uid in owners:
                self._by_owner.setdefault(uid, set()).add(key)
            changes = [self._record("ADDED", resource, obj)]
            if owners and not self._uids.intersection(owners):
                # made for an owner already deleted (a controller that read it just before): the garbage
                # collector deletes a dependent whose owners are all gone, or it would hold its name forever
                self._delete_tree(key, True, changes)
        self._notify(changes)
        return obj

    def update(self, resource: str, namespace: str, name: str, mutate: Callable[[Obj], None]) -> Obj | None:
        """Store a changed copy of an object; None when it is gone. `mutate` edits the copy."""
        with self.cond:
            key = self.key(resource, namespace, name)
            current = self._objects.get(resource, {}).get(key)
            if current is None:
                return None
            new = _copy_for_update(current)
            mutate(new)
            if new == current:
                return current
            new["metadata"]["resourceVersion"] = str(self._next_rv())
            self._objects[resource][key] = new
            change = self._record("MODIFIED", resource, new)
        self._notify([change])
        return new

    def delete(self, resource: str, namespace: str, name: str, propagation: str = "Background") -> Obj:
        """Delete an object and (unless Orphan) everything it owns, dependents first."""
        changes: builtins.list[Change] = []
        with self.cond:
            key = self.key(resource, namespace, name)
            current = self._objects.get(resource, {}).get(key)
            if current is None:
                raise not_found(resource, name)
            answer = current
            if propagation == "Foreground":
                marked = copy.deepcopy(current)
                marked["metadata"]["deletionTimestamp"] = now_iso()
                marked["metadata"]["finalizers"] = ["foregroundDeletion"]
                marked["metadata"]["resourceVersion"] = str(self._next_rv())
                self._objects[resource][key] = marked
                changes.append(self._record("MODIFIED", resource, marked))
                answer = marked
            self._delete_tree(key, propagation != "Orphan", changes)
        self._notify(changes)
        return answer

    def _delete_tree(self, key: Key, cascade: bool, changes: builtins.list[Change]) -> None:
        obj = self._objects.get(key[0], {}).get(key)
        if obj is None:
            return
        uid = obj["metadata"]["uid"]
        dependents = self._by_owner.pop(uid, set())
        if cascade:
            for dep in sorted(dependents):
                self._delete_tree(dep, True, changes)
        del self._objects[key[0]][key]
        self._uids.discard(uid)
        for ref in obj["metadata"].get("ownerReferences") or ():
            self._by_owner.get(ref["uid"], set()).discard(key)
        gone = copy.copy(obj)
        gone["metadata"] = {**obj["metadata"], "resourceVersion": str(self._next_rv())}
        changes.append(self._record("DELETED", key[0], gone))

    def owned(self, uid: str, resource: str) -> builtins.list[Obj]:
        """Objects of `resource` whose ownerReferences name `uid`."""
        with self.cond:
            table = self._objects.get(resource, {})
            return [table[k] for k in self._by_owner.get(uid, ()) if k[0] == resource and k in table]

    def changes_since(self, rv: int) -> builtins.list[Change]:
        """Changes after `rv`; `Gone` when history no longer reaches back that far."""
        with self.cond:
            if rv < self.rv and self._history and self._history[0].rv > rv + 1:
                raise Gone(rv, self._history[0].rv - 1)
            if not self._history or self._history[-1].rv <= rv:
                return []
            # history is ordered by rv; scan from the end
            out: builtins.list[Change] = []
            for change in reversed(self._history):
                if change.rv <= rv:
                    break
                out.append(change)
            out.reverse()
            return out

    def oldest_rv(self) -> int:
        with self.cond:
            return self._history[0].rv if self._history else self.rv
