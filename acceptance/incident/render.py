"""The bundle as ``bundle.json`` (schema ``acceptance/schemas/bundle.schema.json``) and as ``bundle.md``.

``bundle.md`` is the paste-ready first message: short, the facts first (severity and clocks,
affected nodes, window, what failed), then where the rest is. Pure: records in, text out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from acceptance.incident.model import FORMAT, LEVEL_TITLES, Bundle, NcclGroup
from acceptance.units import format_duration

MAX_GROUPS_MD = 8
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
                }
                for c in s.clocks
            ],
            "joins": list(s.joins),
            "escalation": {"to": s.escalate_to, "at_utc": iso(s.escalate_at_utc)} if s.escalate_to else None,
        },
        "inputs": [{"path": i.path, "kinds": list(i.kinds), "sha256": i.sha256, "lines": i.lines} for i in b.inputs],
        "missing": list(b.missing),
    }


def _group_line(g: NcclGroup) -> str:
    first, last = short(g.first_utc), short(g.last_utc)
    when = first if first == last else f"{first} – {last}"
    ranks = g.ranks
    who = (f"rank {ranks[0]}" if len(ranks) == 1 else f"{len(ranks)} ranks ({ranges(ranks)})") if ranks else "no rank"
    nodes = g.nodes
    where = f" on {nodes[0]}" if len(nodes) == 1 else f" on {len(nodes)} nodes" if nodes else ""
    text = g.text if len(g.text) <= 220 else g.text[:217] + "..."
    note = ""
    if g.kind == "watchdog-timeout" and g.seq == 1:
        note = " (SeqNum=1: the very first collective never completed: a start-up or topology problem, not a slow step)"
    return f"{when} — **{g.kind}**, {who}{where}: `{text}`{note}"


def to_markdown(b: Bundle, files: Mapping[str, str | None]) -> str:
    s = b.severity
    ids = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in b.cluster.provider.items())
    head = f"# Incident{f' {b.ticket}' if b.ticket else ''}: cluster {b.cluster.name}" + (f" ({ids})" if ids else "")
    out = [head, ""]
    if b.simulated:
        out += ["**SIMULATED**: made from the recovery-acceptance simulator, not from a real cluster.", ""]
    if s.level:
        out.append(f"**Severity proposed: {s.level}** ({LEVEL_TITLES[s.level]}): {s.reason}.")
        for c in s.clocks:
            out.append(f"- {c.name} within {format_duration(c.target_s)}: by **{short(c.deadline_utc)}**")
        if s.joins:
            out.append(f"- joins from the provider: {', '.join(s.joins)}")
        if s.escalate_to:
            out.append(f"- moves up to {s.escalate_to} at {short(s.escalate_at_utc)} if capacity is not restored")
    else:
        out.append(f"**Severity: none proposed**: {s.reason}.")
    out += ["", "## Facts", ""]
    if b.cluster.affected:
        for a in b.cluster.affected[:4]:
            out.append(f"- **Affected: {a.node}**: " + "; ".join(e.detail for e in a.reasons[:3]))
    else:
        out.append("- Affected nodes: none named by the evidence")
    w = b.window
    if w.how in ("hang", "change-point"):
        out.append(
            f"- **Window**: last healthy step {w.last_healthy_step} at {short(w.last_healthy_utc)}; first bad "
            f"step {w.first_bad_step} at {short(w.first_bad_utc)} ({w.detail})"
        )
    elif w.how == "errors-only":
        out.append(f"- **Window**: first error at {short(w.first_bad_utc)} ({w.detail})")
    else:
        out.append(f"- Window: {w.detail}")
    nodes = b.ranks.by_node()
    job = f"{b.ranks.world_size} ranks" if b.ranks.world_size else "world size unknown"
    out.append(
        f"- **Job**: {job}; {len(b.ranks.entries)} ranks mapped to {len(nodes)} host(s)"
        + (f"; the cluster has {b.cluster.node_count} nodes" if b.cluster.node_count else "")
    )
    for a in b.cluster.affected[:2]:
        if a.node in nodes:
            out.append(f"  - ranks on {a.node}: {ranges(nodes[a.node])}")
    out += ["", "## NCCL and watchdog", ""]
    for g in b.nccl.groups[:MAX_GROUPS_MD]:
        out.append(f"1. {_group_line(g)}")
    if len(b.nccl.groups) > MAX_GROUPS_MD:
        out.append(f"   ({len(b.nccl.groups) - MAX_GROUPS_MD} more in bundle.json)")
    if not b.nccl.groups:
        out.append("No NCCL or watchdog error lines.")
    for e in b.nccl.launcher[:4]:
        out.append(f"- launcher: `{e.get('text')}`")
    if b.nccl.nccl_versions:
        out.append(f"- NCCL version(s) in the logs: {', '.join(b.nccl.nccl_versions)}")
    if b.nccl.hint:
        out.append(f"- {b.nccl.hint}")
    out += ["", "## Step time", ""]
    if b.steps.rows:
        med = (
            f"median {b.steps.median_before_s:.3f} s before, {b.steps.median_after_s:.3f} s after"
            if b.steps.median_before_s and b.steps.median_after_s
            else ""
        )
        ckpt = (
            f"; last checkpoint at step {b.steps.last_checkpoint_step} ({short(b.steps.last_checkpoint_utc)})"
            if b.steps.last_checkpoint_step is not None
            else ""
        )
        out.append(
            f"{len(b.steps.rows)} steps around the change in `{files.get('steps_csv')}`"
            + (f" and `{files.get('steps_plot')}`" if files.get("steps_plot") else "")
            + (f"; {med}" if med else "")
            + ckpt
        )
    else:
        out.append("No training steps in the logs.")
    out += ["", "## Cluster evidence of the affected nodes", ""]
    for n in b.nodes:
        parts = []
        bad = [c for c in n.conditions if c.get("bad")]
        if n.conditions:
            parts.append("conditions: " + (", ".join(f"{c['type']}={c['status']}" for c in bad) if bad else "all good"))
        if n.events:
            parts.append(
                f"{len(n.events)} event(s), e.g. "
                + "; ".join(f"{e.get('reason')}: {str(e.get('message', ''))[:80]}" for e in n.events[:2])
            )
        if n.xids:
            parts.append("; ".join(f"Xid {x['xid']} ({x['name']}) on {x['pci']}" for x in n.xids[:3]))
        if n.nvsmi:
            parts.append(n.nvsmi[1].strip() if len(n.nvsmi) > 1 else n.nvsmi[0])
        out.append(f"- {n.node}: " + ("; ".join(parts) if parts else "nothing recorded"))
    if not b.nodes:
        out.append("- none gathered")
    out += ["", "## Changes since the last accepted state", ""]
    for change in b.changes.changes[:10]:
        when = "within the last 24 h" if change.within_24h else f"since {short(change.reference_utc)}"
        out.append(f"- {change.what}: {change.then} → {change.now} ({when}; vs {change.reference})")
    if not b.changes.changes:
        refs = ", ".join(str(r.get("label")) for r in b.changes.references) or "no reference found"
        out.append(f"- no difference found (compared with: {refs})")
    if b.missing:
        out += ["", "## Missing or partial", ""]
        out += [f"- {m}" for m in b.missing]
    out += [
        "",
        f"Made {short(b.created_utc)} by recovery-acceptance {b.harness_version}; everything above is in "
        "bundle.json, the raw evidence in evidence/; check it with `acceptance verify <bundle folder>`.",
        "",
    ]
    return "\n".join(out)
