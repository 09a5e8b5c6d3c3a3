"""Field 1's affected nodes: which machines the evidence points at, and why.

Signs, each kept as a reason: a rank that lost its GPU (``CUDA error``) or reported NCCL's own error;
the ranks that stayed silent while every other rank of the collective timed out (one node's worth
at most); torchrun's earliest root cause; the launcher naming a host (``Node failure on``, ``mpirun
noticed ... on node``, an ssh failure); kernel Xids or a fallen-off GPU in a host's kernel log;
``nvidia-smi -q`` findings; kubectl conditions that are bad. Hosts become nodes where the pods'
placement or the cluster's node names allow; otherwise the host name stands.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

from acceptance.incident.inputs import Parsed
from acceptance.incident.model import AffectedNode, Evidence, NcclOutput, RankMap
from acceptance.incident.ranks import node_of
from acceptance.tools import nvsmi

GPUS_PER_NODE_MAX = 16


def _where(
    host: str | None, ranks: RankMap, rank: int | None, placement: dict[str, str], nodes: Collection[str]
) -> str | None:
    if rank is not None:
        found = ranks.node_of(rank)
        if found:
            return node_of(found, placement, nodes) or found
    return node_of(host, placement, nodes) or host


def affected_nodes(
    inputs: Sequence[Parsed],
    ranks: RankMap,
    nccl: NcclOutput,
    placement: dict[str, str],
    nodes: Collection[str],
) -> tuple[AffectedNode, ...]:
    reasons: dict[str, list[Evidence]] = {}
    nodes = frozenset(nodes)  # looked up once per host

    def add(where: str | None, evidence: Evidence) -> None:
        if where:
            reasons.setdefault(where, []).append(evidence)

    for group in nccl.groups:
        if group.kind not in ("cuda-error", "nccl-error", "nccl-warn"):
            continue
        for occ in group.occurrences[:GPUS_PER_NODE_MAX]:
            who = f"rank {occ.rank}" if occ.rank is not None else "a process"
            add(
                _where(occ.host, ranks, occ.rank, placement, nodes),
                Evidence(occ.source, occ.line, f"{who}: {group.text[:160]}"),
            )
    timeouts = [g for g in nccl.groups if g.kind == "watchdog-timeout"]
    if timeouts and ranks.world_size:
        reporting = {r for g in timeouts for r in g.ranks}
        silent = sorted(set(range(ranks.world_size)) - reporting)
        if 0 < len(silent) <= GPUS_PER_NODE_MAX:
            g = timeouts[0]
            for rank in silent:
                add(
                    _where(None, ranks, rank, placement, nodes),
                    Evidence(
                        g.occurrences[0].source,
                        None,
                        f"rank {rank} is the one rank of {ranks.world_size} that "
                        f"did not report the watchdog timeout of {g.op or 'the collective'} SeqNum={g.seq}: "
                        "it never joined the collective",
                    ),
                )
    for item in inputs:
        roots = sorted(
            (f for f in item.torch.failures if f.root_cause and f.host),
            key=lambda f: (f.time is None, f.time or datetime.min, f.line),
        )
        if roots:
            first = roots[0]
            sig = f" (signal {first.signal})" if first.signal else ""
            add(
                _where(first.host, ranks, None, placement, nodes),
                Evidence(
                    item.label,
                    first.line,
                    f"torchrun's first root cause: rank {first.rank} exit code {first.exitcode}{sig} at {first.time}",
                ),
            )
        for event in item.launcher:
            nonzero = event.kind == "task-failed" and event.exit_code not in (None, 0)
            if (event.kind in ("node-failure", "rank-exited", "ssh-failed", "signal") or nonzero) and event.host:
                add(_where(event.host, ranks, None, placement, nodes), Evidence(item.label, event.line, event.text))
                if event.kind == "rank-exited":
                    break
        host = item.host
        if item.kernel is not None:
            target = host or (item.kernel.hosts[0] if item.kernel.hosts else None)
            for xid in item.kernel.xids[:4]:
                add(
                    _where(target, ranks, None, placement, nodes) or f"(host of {item.label})",
                    Evidence(item.label, xid.line, f"Xid {xid.xid} ({xid.name}) on PCI {xid.pci}: {xid.message[:100]}"),
                )
            for fell in item.kernel.fallen_off[:2]:
                add(
                    _where(target, ranks, None, placement, nodes) or f"(host of {item.label})",
                    Evidence(item.label, fell.line, f"GPU {fell.pci} has fallen off the bus"),
                )
        if item.nvsmi is not None:
            where = _where(host, ranks, None, placement, nodes) or f"(host of {item.label})"
            for line in item.nvsmi.unreachable[:2]:
                add(where, Evidence(item.label, None, f"nvidia-smi: {line}"))
            for gpu in item.nvsmi.gpus:
                for finding in nvsmi.findings(gpu):
                    add(where, Evidence(item.label, gpu.line, f"nvidia-smi GPU {gpu.bus_id}: {finding}"))
        if item.kubectl is not None:
            for desc in item.kubectl.nodes:
                bad = [c for c in desc.conditions if c.bad]
                if bad and (desc.name or host):
                    add(
                        desc.name or host,
                        Evidence(
                            item.label,
                            bad[0].line,
                            "conditions: " + ", ".join(f"{c.type}={c.status} ({c.reason})" for c in bad),
                        ),
                    )
            for row in item.kubectl.node_rows:
                if not row.ready:
                    add(row.name, Evidence(item.label, row.line, f"kubectl get nodes: {row.status}"))
    known = set(nodes) | set(placement.values())
    ordered = sorted(reasons.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return tuple(AffectedNode(where, tuple(ev), where in known) for where, ev in ordered)
