"""The bundle as ``bundle.json`` (schema ``acceptance/schemas/bundle.schema.json``); ``bundle.md`` is
`acceptance.incident.markdown`. Pure: records in, data out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from acceptance.incident.model import FORMAT, LEVEL_TITLES, Bundle, NcclGroup
from acceptance.units import format_duration

MAX_OCCURRENCES_JSON = 4096


def iso(moment: datetime | None) -> str | None:
    return moment.isoformat() + "Z" if moment is not None else None


def short(moment: datetime | None) -> str:
    return f"{moment:%Y-%m-%d %H:%M:%S} UTC" if moment is not None else "time unknown"


def ranges(values: Iterable[int]) -> str:
    """``[0, 1, 2, 5]`` → ``0-2, 5``."""
    items = sorted(set(values))
    out: list[str] = []
    i = 0
    while i < len(items):
        j = i
        while j + 1 < len(items) and items[j + 1] == items[j] + 1:
            j += 1
        out.append(str(items[i]) if i == j else f"{items[i]}-{items[j]}")
        i = j + 1
    return ", ".join(out)


def _group_json(g: NcclGroup) -> dict[str, Any]:
    return {
        "kind": g.kind,
        "text": g.text,
        "op": g.op,
        "seq": g.seq,
        "timeout_ms": g.timeout_ms,
        "first_utc": iso(g.first_utc),
        "last_utc": iso(g.last_utc),
        "ranks": g.ranks,
        "nodes": g.nodes,
        "occurrences": [
            {
                "rank": o.rank,
                "host": o.host,
                "node": o.node,
                "first_utc": iso(o.first_utc),
                "last_utc": iso(o.last_utc),
                "count": o.count,
                "source": o.source,
                "line": o.line,
            }
            for o in g.occurrences[:MAX_OCCURRENCES_JSON]
        ],
    }


def to_json(b: Bundle, files: Mapping[str, str | None]) -> dict[str, Any]:
    """The document of ``bundle.json``; `files` names the step CSV and plot (``steps_csv``, ``steps_plot``)."""
    s = b.severity
    return {
        "format": FORMAT,
        "created_utc": iso(b.created_utc),
        "ticket": b.ticket,
        "harness_version": b.harness_version,
        "simulated": b.simulated,
        "log_clock": b.log_clock,
        "cluster": {
            "name": b.cluster.name,
            "provider": dict(b.cluster.provider),
            "node_count": b.cluster.node_count,
            "job_nodes": list(b.cluster.job_nodes),
            "affected": [
                {"node": a.node, "cluster_node": a.is_cluster_node, "reasons": [e.to_json() for e in a.reasons]}
                for a in b.cluster.affected
            ],
        },
        "window": {
            "how": b.window.how,
            "last_healthy_step": b.window.last_healthy_step,
            "last_healthy_utc": iso(b.window.last_healthy_utc),
            "first_bad_step": b.window.first_bad_step,
            "first_bad_utc": iso(b.window.first_bad_utc),
            "detail": b.window.detail,
            "evidence": [e.to_json() for e in b.window.evidence],
        },
        "ranks": {
            "world_size": b.ranks.world_size,
            "mapped": len(b.ranks.entries),
            "by_node": {node: ranges(r) for node, r in sorted(b.ranks.by_node().items())},
            "entries": [
                {"rank": e.rank, "host": e.host, "node": e.node, "sources": list(e.sources)} for e in b.ranks.entries
            ],
            "conflicts": list(b.ranks.conflicts),
        },
        "nccl": {
            "nccl_versions": list(b.nccl.nccl_versions),
            "hint": b.nccl.hint,
            "errors": [_group_json(g) for g in b.nccl.groups],
            "launcher": [dict(e) for e in b.nccl.launcher],
        },
        "steps": {
            "csv": files.get("steps_csv"),
            "plot": files.get("steps_plot"),
            "rows": len(b.steps.rows),
            "per_rank": b.steps.per_rank,
            "median_before_s": b.steps.median_before_s,
            "median_after_s": b.steps.median_after_s,
            "last_checkpoint_step": b.steps.last_checkpoint_step,
            "last_checkpoint_utc": iso(b.steps.last_checkpoint_utc),
            "checkpoint_interval_steps": b.steps.checkpoint_interval_steps,
        },
        "node_evidence": [
            {
                "node": n.node,
                "conditions": [dict(c) for c in n.conditions],
                "events": [dict(e) for e in n.events],
                "xids": [dict(x) for x in n.xids],
                "nvidia_smi": list(n.nvsmi),
                "allocatable_gpus": n.allocatable_gpus,
            }
            for n in b.nodes
        ],
        "changes": {
            "references": [dict(r) for r in b.changes.references],
            "items": [
                {
                    "what": c.what,
                    "then": c.then,
                    "now": c.now,
                    "reference": c.reference,
                    "reference_utc": iso(c.reference_utc),
                    "within_24h": c.within_24h,
                }
                for c in b.changes.changes
            ],
            "unchanged": list(b.changes.unchanged),
        },
        "severity": {
            "level": s.level,
            "title": LEVEL_TITLES.get(s.level or "", None),
            "reason": s.reason,
            "rule": s.rule,
            "clocks": [
                {
                    "name": c.name,
                    "target_s": c.target_s,
                    "target": format_duration(c.target_s),
                    "deadline_utc": iso(c.deadline_utc),
                    "calendar": c.calendar,
                    "start_outside_coverage": c.start_outside_coverage,
                    "counted_from_utc": iso(c.counted_from_utc),
                }
                for c in s.clocks
            ],
            "joins": list(s.joins),
            "escalation": {"to": s.escalate_to, "at_utc": iso(s.escalate_at_utc)} if s.escalate_to else None,
        },
        "inputs": [{"path": i.path, "kinds": list(i.kinds), "sha256": i.sha256, "lines": i.lines} for i in b.inputs],
        "missing": list(b.missing),
    }
