"""The incident bundle: the seven fields of the first message, the proposed severity, what is missing.

Frozen records; `render.to_json` turns them into ``bundle.json`` (schema
``acceptance/schemas/bundle.schema.json``). Every time is naive UTC here; the JSON writes it with ``Z``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

FORMAT = "recovery-acceptance-bundle/1"
LEVELS = ("down", "degraded", "node_out")  # most severe first; an incident "moves up" towards `down`
LEVEL_TITLES = {
    "down": "the job is down across the cluster",
    "degraded": "the job runs with degraded throughput",
    "node_out": "one node is out while the job continues on a reduced set",
}


@dataclass(frozen=True)
class Evidence:
    """Where a fact comes from: an input file and line, a cluster object, a rule."""

    source: str
    line: int | None = None
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "line": self.line, "detail": self.detail}


@dataclass(frozen=True)
class AffectedNode:
    node: str
    reasons: tuple[Evidence, ...]
    is_cluster_node: bool = True


@dataclass(frozen=True)
class ClusterIds:
    """Field 1: who and where."""

    name: str
    provider: Mapping[str, str]
    node_count: int | None
    job_nodes: tuple[str, ...]
    affected: tuple[AffectedNode, ...]


@dataclass(frozen=True)
class Window:
    """Field 2: the last healthy step and the first bad one (UTC), and how they were found."""

    how: str  # "hang" | "change-point" | "errors-only" | "none"
    last_healthy_step: int | None = None
    last_healthy_utc: datetime | None = None
    first_bad_step: int | None = None
    first_bad_utc: datetime | None = None
    detail: str = ""
    evidence: tuple[Evidence, ...] = ()


@dataclass(frozen=True)
class RankEntry:
    rank: int
    host: str | None
    node: str | None
    sources: tuple[str, ...]


@dataclass(frozen=True)
class RankMap:
    """Field 3: which ranks ran where."""

    world_size: int | None
    entries: tuple[RankEntry, ...]
    conflicts: tuple[str, ...] = ()

    def node_of(self, rank: int) -> str | None:
        found = self._index().get(rank)
        return (found.node or found.host) if found is not None else None

    def _index(self) -> dict[int, RankEntry]:
        cached: dict[int, RankEntry] | None = self.__dict__.get("_by_rank")
        if cached is None:
            cached = {e.rank: e for e in self.entries}
            object.__setattr__(self, "_by_rank", cached)
        return cached

    def by_node(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for e in self.entries:
            where = e.node or e.host
            if where:
                out.setdefault(where, []).append(e.rank)
        return out


@dataclass(frozen=True)
class RankOccurrence:
    rank: int | None
    host: str | None
    node: str | None
    first_utc: datetime | None
    last_utc: datetime | None
    count: int
    line: int
    source: str


@dataclass(frozen=True)
class NcclGroup:
    """Field 4: one error (same kind and text on any rank), with each rank that printed it."""

    kind: str
    text: str
    first_utc: datetime | None
    last_utc: datetime | None
    occurrences: tuple[RankOccurrence, ...]
    op: str | None = None
    seq: int | None = None
    timeout_ms: int | None = None

    @property
    def ranks(self) -> list[int]:
        return sorted({o.rank for o in self.occurrences if o.rank is not None})

    @property
    def nodes(self) -> list[str]:
        found: set[str] = set()
        for o in self.occurrences:
            where = o.node or o.host
            if where:
                found.add(where)
        return sorted(found)


@dataclass(frozen=True)
class NcclOutput:
    groups: tuple[NcclGroup, ...]
    launcher: tuple[Mapping[str, Any], ...]
    nccl_versions: tuple[str, ...]
    hint: str | None


@dataclass(frozen=True)
class StepSeries:
    """Field 5: the step times around the change (rows written to ``steps.csv``)."""

    rows: tuple[Mapping[str, Any], ...]
    per_rank: bool
    median_before_s: float | None
    median_after_s: float | None
    last_checkpoint_step: int | None = None
    last_checkpoint_utc: datetime | None = None
    checkpoint_interval_steps: int | None = None


@dataclass(frozen=True)
class NodeEvidence:
    """Field 6: what the cluster says about one affected node (Kubernetes, or the kernel and nvidia-smi)."""

    node: str
    conditions: tuple[Mapping[str, Any], ...] = ()
    events: tuple[Mapping[str, Any], ...] = ()
    xids: tuple[Mapping[str, Any], ...] = ()
    nvsmi: tuple[str, ...] = ()
    allocatable_gpus: int | None = None


@dataclass(frozen=True)
class Change:
    """Field 7: one difference from the last accepted state."""

    what: str
    then: str | None
    now: str | None
    reference: str
    reference_utc: datetime | None
    within_24h: bool | None


@dataclass(frozen=True)
class ChangeLog:
    references: tuple[Mapping[str, Any], ...]
    changes: tuple[Change, ...]
    unchanged: tuple[str, ...] = ()


@dataclass(frozen=True)
class Clock:
    name: str  # "respond" | "restore" | "resolve"
    target_s: float
    deadline_utc: datetime
    calendar: str = "24x7"  # the calendar the deadline was counted in (the agreed coverage hours)
    start_outside_coverage: bool = False
    counted_from_utc: datetime | None = None  # the first covered instant at or after the clock's start


@dataclass(frozen=True)
class Severity:
    level: str | None
    reason: str
    clocks: tuple[Clock, ...] = ()
    joins: tuple[str, ...] = ()
    escalate_to: str | None = None
    escalate_at_utc: datetime | None = None
    rule: str = ""
    calendar: str = "24x7"  # the calendar of every deadline here, escalation included


@dataclass(frozen=True)
class InputFile:
    path: str
    kinds: tuple[str, ...]
    sha256: str
    lines: int


@dataclass(frozen=True)
class Bundle:
    created_utc: datetime
    ticket: str | None
    harness_version: str
    simulated: bool
    log_clock: str
    cluster: ClusterIds
    window: Window
    ranks: RankMap
    nccl: NcclOutput
    steps: StepSeries
    nodes: tuple[NodeEvidence, ...]
    changes: ChangeLog
    severity: Severity
    inputs: tuple[InputFile, ...]
    missing: tuple[str, ...] = field(default_factory=tuple)
