"""``bundle.md``: the paste-ready first message of an incident.

Short, the facts first (severity and clocks, affected nodes, window, what failed), then where
the rest is. Pure: a `Bundle` in, Markdown text out.
"""

from __future__ import annotations

from collections.abc import Mapping

from acceptance.incident.model import LEVEL_TITLES, Bundle, NcclGroup, Severity
from acceptance.incident.render import ranges, short
from acceptance.units import format_duration

MAX_GROUPS_MD = 8


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


def _calendar(s: Severity) -> list[str]:
    """The clocks' calendar, when they count coverage hours (24x7 is plain wall-clock time: nothing to add)."""
    if not s.clocks or all(c.calendar == "24x7" for c in s.clocks):
        return []
    line = f"- clocks count coverage hours only: {s.clocks[0].calendar}"
    late = next((c for c in s.clocks if c.start_outside_coverage and c.counted_from_utc), None)
    if late is not None:
        line += f"; the bundle was made outside coverage, the clocks count from {short(late.counted_from_utc)}"
    return [line]


def markdown(b: Bundle, files: Mapping[str, str | None]) -> str:
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
        out += _calendar(s)
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
        unread = [c for c in n.conditions if c.get("bad") is None]
        if n.conditions:
            said = [f"{c['type']}={c['status']}" for c in bad] + [f"{c['type']}: {c['status']}" for c in unread]
            parts.append("conditions: " + (", ".join(said) if said else "all good"))
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
