"""One round of group tests, judged: each group ok, slow or failed, against two references.

A group's ratio is the median, over its sweep's sizes, of out-of-place busbw over the pair
baseline recorded at handover for the same kind of group (inside one leaf, or across leaves).
A group is slow when its ratio is below the agreed margin **and** either it stands out from
the round's other groups of its kind (robust z below `Z_LIMIT`, the spread floored at `FLOOR`)
or it is below the pair baseline by more than that noise floor allows (``Z_LIMIT × FLOOR``: a
switch slows every crossing group alike, so none of them stands out). So run-to-run noise near
the margin never makes a suspect. Without a pair baseline the round's own median per size is
the reference.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from acceptance.judge.localize_topology import Topology

Z_LIMIT = 3.0
FLOOR = 0.02
SIZE_MATCH = 0.02  # sizes within 2% are the same row (collectives round per-rank counts)

OK, SLOW, FAILED = "ok", "slow", "failed"


@dataclass(frozen=True)
class Observation:
    """A judged group test: which nodes, in which round, and what it showed."""

    round: int
    nodes: tuple[str, ...]
    status: str
    ratio: float | None = None
    blamed: tuple[str, ...] = ()
    detail: str = ""

    @property
    def bad(self) -> bool:
        return self.status != OK

    def to_json(self) -> dict[str, Any]:
        return {"round": self.round, "nodes": list(self.nodes), "status": self.status, "ratio": self.ratio,
                "blamed": list(self.blamed), "detail": self.detail}  # fmt: skip

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Observation:
        ratio = doc.get("ratio")
        return cls(
            int(doc["round"]),
            tuple(doc["nodes"]),
            str(doc["status"]),
            None if ratio is None else float(ratio),
            tuple(doc.get("blamed", ())),
            str(doc.get("detail", "")),
        )


@dataclass(frozen=True)
class GroupMeasure:
    """One group test as run: busbw (GB/s) per message size, or why there is none."""

    nodes: tuple[str, ...]
    busbw: Mapping[int, float] = field(default_factory=dict)
    failure: str = ""
    blamed: tuple[str, ...] = ()


def _nearest(table: Mapping[int, float], size: int) -> float | None:
    best = min(table, key=lambda s: abs(s - size), default=None)
    if best is None or abs(best - size) > SIZE_MATCH * max(size, 1):
        return None
    return table[best]


@dataclass(frozen=True)
class PairReference:
    """Healthy pairs at handover: median busbw per size, inside a leaf and across leaves."""

    intra: Mapping[int, float]
    cross: Mapping[int, float]

    def expected(self, crossing: bool, size: int) -> float | None:
        first, second = (self.cross, self.intra) if crossing else (self.intra, self.cross)
        found = _nearest(first, size)
        return found if found is not None else _nearest(second, size)

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(sorted(set(self.intra) | set(self.cross)))

    @classmethod
    def from_pairs(cls, pairs: Sequence[tuple[bool, Mapping[int, float]]]) -> PairReference:
        """From (crossing, busbw per size) of each recorded pair."""
        tables: dict[bool, dict[int, list[float]]] = {True: {}, False: {}}
        for crossing, busbw in pairs:
            for size, value in busbw.items():
                tables[crossing].setdefault(int(size), []).append(float(value))
        med = {k: {s: statistics.median(v) for s, v in t.items()} for k, t in tables.items()}
        return cls(intra=med[False], cross=med[True])


def _ratios_to_round(measures: Sequence[GroupMeasure], topology: Topology) -> list[list[float]]:
    """Without a pair baseline: each size against the round's median of groups of the same kind."""
    out = []
    for m in measures:
        crossing = topology.crosses(m.nodes)
        peers = [p for p in measures if p.busbw and topology.crosses(p.nodes) == crossing]
        ratios = []
        for size, value in m.busbw.items():
            values = [v for p in peers for v in (_nearest(p.busbw, size),) if v is not None]
            if values and statistics.median(values) > 0:
                ratios.append(value / statistics.median(values))
        out.append(ratios)
    return out


def group_ratios(
    measures: Sequence[GroupMeasure], topology: Topology, reference: PairReference | None
) -> list[float | None]:
    """Each group's ratio: the median over its sizes of busbw / expected (None when it gave no busbw)."""
    if reference is None:
        per_size = _ratios_to_round(measures, topology)
    else:
        per_size = []
        for m in measures:
            crossing = topology.crosses(m.nodes)
            ratios = []
            for size, value in m.busbw.items():
                expected = reference.expected(crossing, size)
                if expected:
                    ratios.append(value / expected)
            per_size.append(ratios)
    return [statistics.median(r) if r and not m.failure else None for m, r in zip(measures, per_size, strict=True)]


def _pct(x: float) -> str:
    return f"{x * 100:.0f}%"


def observe_round(
    number: int,
    measures: Sequence[GroupMeasure],
    topology: Topology,
    tolerance: float,
    reference: PairReference | None,
) -> tuple[Observation, ...]:
    """Judge one round's groups (see the module docstring)."""
    ratios = group_ratios(measures, topology, reference)
    floor = 1.0 - tolerance
    against = "the pair baseline" if reference is not None else "the round's median"
    kinds: dict[bool, list[float]] = {}
    for m, r in zip(measures, ratios, strict=True):
        if r is not None:
            kinds.setdefault(topology.crosses(m.nodes), []).append(r)
    out = []
    for m, r in zip(measures, ratios, strict=True):
        if r is None:
            reason = m.failure or "no busbw at the sweep's sizes"
            out.append(Observation(number, m.nodes, FAILED, None, m.blamed, reason))
            continue
        peers = kinds[topology.crosses(m.nodes)]
        median = statistics.median(peers)
        spread = max(1.4826 * statistics.median(abs(x - median) for x in peers), FLOOR)
        z = (r - median) / spread
        slow = r < floor and (z < -Z_LIMIT or r < 1.0 - Z_LIMIT * FLOOR)
        out.append(Observation(number, m.nodes, SLOW if slow else OK, round(r, 4), (), f"{_pct(r)} of {against}"))
    return tuple(out)
