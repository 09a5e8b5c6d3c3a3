"""Field 6: what the cluster says about each affected node.

On Kubernetes: the node's conditions (``Ready`` must be True, every other condition False),
allocatable GPUs and events, read from the cluster or from ``kubectl describe node`` pastes. Over
SSH or offline: the Xid lines of the host's kernel log and an ``nvidia-smi -q`` excerpt, from the
evidence files given for that host. Pure: the I/O layer hands in what it read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from acceptance.incident.inputs import Parsed
from acceptance.incident.model import AffectedNode, NodeEvidence
from acceptance.tools import nvsmi
from acceptance.tools.kubectl.model import HEALTHY_WHEN_TRUE


def condition(kind: str, status: str, reason: str = "", message: str = "") -> dict[str, Any]:
    healthy = "True" if kind in HEALTHY_WHEN_TRUE else "False"
    return {"type": kind, "status": status, "reason": reason, "message": message,
            "bad": status == "Unknown" or status != healthy}  # fmt: skip


def _matches(item: Parsed, node: str) -> bool:
    host = item.host or ""
    return bool(host) and (host == node or host.split(".", 1)[0] == node.split(".", 1)[0])


def node_evidence(
    affected: Sequence[AffectedNode],
    inputs: Sequence[Parsed],
    conditions: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    events: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    allocatable: Mapping[str, int] | None = None,
) -> tuple[NodeEvidence, ...]:
    """One record per affected node, from the cluster's answers and from the evidence inputs."""
    out = []
    for a in affected:
        node = a.node
        conds = [dict(c) for c in (conditions or {}).get(node, ())]
        evs = [dict(e) for e in (events or {}).get(node, ())]
        xids: list[dict[str, Any]] = []
        smi: list[str] = []
        for item in inputs:
            if item.kubectl is not None:
                for desc in item.kubectl.nodes:
                    if desc.name == node or (desc.name is None and _matches(item, node)):
                        conds += [c.to_json() for c in desc.conditions]
                        evs += [{**e.to_json(), "object": f"Node/{node}"} for e in desc.events]
                evs += [e.to_json() for e in item.kubectl.events if node in e.message or node in e.object]
            if not _matches(item, node):
                continue
            if item.kernel is not None:
                xids += [x.to_json() for x in item.kernel.xids]
                xids += [{"xid": None, "name": "fallen off the bus", "pci": f.pci, "line": f.line,
                          "message": "GPU has fallen off the bus"} for f in item.kernel.fallen_off
                         if not any(x.pci == f.pci and x.xid == 79 for x in item.kernel.xids)]  # fmt: skip
            if item.nvsmi is not None:
                smi += nvsmi.excerpt(item.nvsmi)
        out.append(NodeEvidence(node, tuple(conds), tuple(evs), tuple(xids), tuple(smi),
                                (allocatable or {}).get(node)))  # fmt: skip
    return tuple(out)
