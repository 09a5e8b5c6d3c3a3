"""Records read from kubectl's human output: node conditions, events, pod and node descriptions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

# Condition types whose healthy status is "True"; for every other type "True" is the bad state
# (MemoryPressure, DiskPressure, PIDPressure, NetworkUnavailable and node-problem-detector's own).
HEALTHY_WHEN_TRUE = frozenset({"Ready"})
# What a node description says about Ready when its Conditions table (or the paste) has no Ready row.
READY_NOT_IN_PASTE = "Ready: not in the paste"


@dataclass(frozen=True)
class Condition:
    type: str
    status: str
    reason: str = ""
    message: str = ""
    heartbeat: datetime | None = None
    transition: datetime | None = None
    line: int = 0

    @property
    def bad(self) -> bool:
        """Unknown is always bad; otherwise Ready must be True and every other condition False."""
        if self.status == "Unknown":
            return True
        healthy = "True" if self.type in HEALTHY_WHEN_TRUE else "False"
        return self.status != healthy

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "status": self.status, "reason": self.reason, "message": self.message,
                "bad": self.bad, "transition": self.transition.isoformat() if self.transition else None,
                "line": self.line}  # fmt: skip


@dataclass(frozen=True)
class Event:
    """One row of an events table.

    `last_seen` and `first_seen` are ages as printed (``115m``, ``9m43s``) and stay relative: the
    paste does not say when it was taken. Only output that prints absolute times (kubectl before
    1.0: ``Tue, 31 Mar 2015 19:56:05 +0300``) sets `last_seen_utc` / `first_seen_utc` (naive UTC),
    and then `last_seen` is empty. `count` and `over` come from ``(x3 over 61s)`` or a COUNT column.
    """

    type: str
    reason: str
    message: str
    last_seen: str = ""
    count: int = 1
    over: str | None = None
    source: str = ""
    object: str = ""
    line: int = 0
    namespace: str = ""
    first_seen: str | None = None
    last_seen_utc: datetime | None = None
    first_seen_utc: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "reason": self.reason, "message": self.message, "last_seen": self.last_seen,
                "count": self.count, "over": self.over, "source": self.source, "object": self.object,
                "namespace": self.namespace, "first_seen": self.first_seen,
                "last_seen_utc": self.last_seen_utc.isoformat() if self.last_seen_utc else None,
                "first_seen_utc": self.first_seen_utc.isoformat() if self.first_seen_utc else None,
                "line": self.line}  # fmt: skip


@dataclass(frozen=True)
class ContainerState:
    name: str
    image: str | None = None
    image_id: str | None = None
    state: str | None = None
    state_reason: str | None = None
    last_state: str | None = None
    last_reason: str | None = None
    exit_code: int | None = None
    restart_count: int | None = None
    init: bool = False


@dataclass(frozen=True)
class NodeDescription:
    """A ``kubectl describe node`` output, or the part of it that was pasted.

    `name` is the ``Name:`` line, else the one node named on the command line, else None.
    `unschedulable` is None where the output has no ``Unschedulable:`` line (kubectl before 1.10).
    `capacity` / `allocatable` hold the items as printed (``nvidia.com/gpu: "1"``); `hostname` is the
    ``Hostname`` address; `unread` the lines inside its Conditions or Events table that are no row
    (a row cut short by the paste: never taken for a condition).
    """

    name: str | None
    taints: tuple[str, ...] = ()
    unschedulable: bool | None = None
    conditions: tuple[Condition, ...] = ()
    events: tuple[Event, ...] = ()
    line: int = 0
    capacity: Mapping[str, str] = field(default_factory=dict)
    allocatable: Mapping[str, str] = field(default_factory=dict)
    hostname: str | None = None
    unread: tuple[int, ...] = ()

    @property
    def not_ready(self) -> bool:
        return any(c.type == "Ready" and c.bad for c in self.conditions)

    @property
    def ready(self) -> str | None:
        """The Ready row's status (``True``, ``False``, ``Unknown``), None when the paste has no Ready row."""
        return next((c.status for c in self.conditions if c.type == "Ready"), None)

    @property
    def ready_text(self) -> str:
        return f"Ready: {self.ready}" if self.ready is not None else READY_NOT_IN_PASTE

    @property
    def allocatable_gpus(self) -> int | None:
        value = self.allocatable.get("nvidia.com/gpu")
        return int(value) if value is not None and value.isdigit() else None


@dataclass(frozen=True)
class PodDescription:
    name: str | None
    namespace: str | None = None
    node: str | None = None
    status: str | None = None
    reason: str | None = None
    message: str | None = None
    containers: tuple[ContainerState, ...] = ()
    events: tuple[Event, ...] = ()
    line: int = 0
    unread: tuple[int, ...] = ()


@dataclass(frozen=True)
class NodeRow:
    """A row of ``kubectl get nodes`` (label columns of ``-L`` in `labels`, empty ones omitted).

    `roles` and `version` are empty where the output has no such column (kubectl before 1.6 / 1.8).
    """

    name: str
    status: str
    roles: str
    age: str
    version: str
    labels: dict[str, str] = field(default_factory=dict)
    line: int = 0

    @property
    def ready(self) -> bool:
        return self.status.split(",")[0] == "Ready"

    @property
    def cordoned(self) -> bool:
        """``Ready,SchedulingDisabled``: Ready, but no new pod lands on it."""
        return "SchedulingDisabled" in self.status.split(",")


@dataclass(frozen=True)
class PodRow:
    """A row of ``kubectl get pods``; STATUS is the pod's reason when it has one (``UnexpectedAdmissionError``).

    `node` only with ``-o wide``; `namespace` only with ``-A``; `age` stays relative as printed.
    """

    name: str
    ready: str
    status: str
    restarts: str
    age: str
    namespace: str = ""
    node: str | None = None
    line: int = 0


@dataclass(frozen=True)
class KubectlText:
    """Everything recognised in a paste of kubectl output (several commands may be in one paste).

    `elided`: the lines of elision marks (``...``, ``[...]``) written by the person pasting; `unread`: lines
    inside a recognised table that are no row of it (cut short, shifted cells), in every description too.
    """

    source: str
    nodes: tuple[NodeDescription, ...] = ()
    pods: tuple[PodDescription, ...] = ()
    events: tuple[Event, ...] = ()
    node_rows: tuple[NodeRow, ...] = ()
    pod_rows: tuple[PodRow, ...] = ()
    elided: tuple[int, ...] = ()
    unread: tuple[int, ...] = ()

    @property
    def recognised(self) -> bool:
        return bool(self.nodes or self.pods or self.events or self.node_rows or self.pod_rows)
