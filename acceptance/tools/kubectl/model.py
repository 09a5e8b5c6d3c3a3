"""Records read from kubectl's human output: node conditions, events, pod and node descriptions."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

# Condition types whose healthy status is "True"; for every other type "True" is the bad state
# (MemoryPressure, DiskPressure, PIDPressure, NetworkUnavailable and node-problem-detector's own).
HEALTHY_WHEN_TRUE = frozenset({"Ready"})


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
    """One row of an events table; `last_seen` is the age as printed (``21s``), `count` from ``(x3 over 61s)``."""

    type: str
    reason: str
    message: str
    last_seen: str = ""
    count: int = 1
    over: str | None = None
    source: str = ""
    object: str = ""
    line: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "reason": self.reason, "message": self.message, "last_seen": self.last_seen,
                "count": self.count, "over": self.over, "source": self.source, "object": self.object,
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
    name: str | None
    taints: tuple[str, ...] = ()
    unschedulable: bool | None = None
    conditions: tuple[Condition, ...] = ()
    events: tuple[Event, ...] = ()
    line: int = 0

    @property
    def not_ready(self) -> bool:
        return any(c.type == "Ready" and c.bad for c in self.conditions)


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


@dataclass(frozen=True)
class NodeRow:
    """A row of ``kubectl get nodes`` (label columns of ``-L`` in `labels`, empty ones omitted)."""

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


@dataclass(frozen=True)
class KubectlText:
    """Everything recognised in a paste of kubectl output (several commands may be in one paste)."""

    source: str
    nodes: tuple[NodeDescription, ...] = ()
    pods: tuple[PodDescription, ...] = ()
    events: tuple[Event, ...] = ()
    node_rows: tuple[NodeRow, ...] = ()

    @property
    def recognised(self) -> bool:
        return bool(self.nodes or self.pods or self.events or self.node_rows)
