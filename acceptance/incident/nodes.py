"""Field 6: what the cluster says about each affected node.

On Kubernetes: the node's conditions (``Ready`` must be True, every other condition False),
allocatable GPUs and events, read from the cluster or from ``kubectl describe node`` pastes. Over
SSH or offline: the Xid lines of the host's kernel log and an ``nvidia-smi -q`` excerpt, from the
evidence files given for that host. Pure: the I/O layer hands in what it read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from acceptance.incident.inputs import Parsed
from acceptance.incident.model import AffectedNode, NodeEvidence
from acceptance.tools import nvsmi
from acceptance.tools.kubectl.model import HEALTHY_WHEN_TRUE, READY_NOT_IN_PASTE, NodeDescription


def condition(kind: str, status: str, reason: str = "", message: str = "") -> dict[str, Any]:
    healthy = "True" if kind in HEALTHY_WHEN_TRUE else "False"
    return {"type": kind, "status": status, "reason": reason, "message": message,
            "bad": status == "Unknown" or status != healthy}  # fmt: skip


def _matches(item: Parsed, node: str) -> bool:
    host = item.host or ""
    return bool(host) and (host == node or host.split(".", 1)[0] == node.split(".", 1)[0])


def _same(name: str | None, node: str) -> bool:
    return bool(name) and (name == node or str(name).split(".", 1)[0] == node.split(".", 1)[0])


def _mentions(text: str, node: str) -> bool:
    """`node` as a whole name in `text` (``node/gpu-1``, ``nodeName:gpu-1,``), not inside ``gpu-10``."""
    return re.search(rf"(?<![\w-]){re.escape(node)}(?![\w-])", text) is not None


def _described(desc: NodeDescription, item: Parsed, node: str) -> bool:
    """The paste describes `node`: by its Name (or the command line), else by the evidence's HOST= or Hostname."""
    if desc.name is not None:
        return desc.name == node
    return _matches(item, node) or _same(desc.hostname, node)


def _ready_not_in_paste(item: Parsed, desc: NodeDescription) -> dict[str, Any]:
    """What a truncated describe says about Ready: nothing; recorded so that no one reads it as Ready."""
    where = f"{item.label} line {desc.line}" if desc.line else item.label
    cut = f"; line {', '.join(map(str, desc.unread))} could not be read" if desc.unread else ""
    return {"type": "Ready", "status": "not in the paste", "reason": "", "bad": None, "line": desc.line,
            "message": f"{READY_NOT_IN_PASTE} ({where}: no Ready row in the Conditions pasted{cut})"}  # fmt: skip


def _kubectl(item: Parsed, node: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int | None]:
    """Conditions, events and allocatable GPUs that a kubectl paste gives for `node`."""
    assert item.kubectl is not None
    conds: list[dict[str, Any]] = []
    evs: list[dict[str, Any]] = []
    gpus: int | None = None
    for desc in item.kubectl.nodes:
        if _described(desc, item, node):
            conds += [c.to_json() for c in desc.conditions]
            if desc.ready is None:
                conds.append(_ready_not_in_paste(item, desc))
            evs += [{**e.to_json(), "object": f"Node/{node}"} for e in desc.events]
            gpus = desc.allocatable_gpus if gpus is None else gpus
    for pod in item.kubectl.pods:
        if _same(pod.node, node):
            evs += [{**e.to_json(), "object": f"Pod/{pod.name}"} for e in pod.events if e.type == "Warning"]
    evs += [e.to_json() for e in item.kubectl.events if _mentions(e.message, node) or _mentions(e.object, node)]
    return conds, evs, gpus


def node_evidence(
    affected: Sequence[AffectedNode],
    inputs: Sequence[Parsed],
    conditions: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    events: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    allocatable: Mapping[str, int] | None = None,
) -> tuple[NodeEvidence, ...]:
    """One record per affected node, from the cluster's answers and from the evidence inputs.

    A ``kubectl describe node`` paste whose Conditions have no Ready row (a truncated paste) adds a
    record with status ``not in the paste`` and ``bad`` None: it is not taken for Ready.
    """
    out = []
    for a in affected:
        node = a.node
        conds = [dict(c) for c in (conditions or {}).get(node, ())]
        evs = [dict(e) for e in (events or {}).get(node, ())]
        gpus = (allocatable or {}).get(node)
        xids: list[dict[str, Any]] = []
        smi: list[str] = []
        for item in inputs:
            if item.kubectl is not None:
                found_conds, found_evs, pasted_gpus = _kubectl(item, node)
                conds += found_conds
                evs += found_evs
                gpus = pasted_gpus if gpus is None else gpus
            if not _matches(item, node):
                continue
            if item.kernel is not None:
                xids += [x.to_json() for x in item.kernel.xids]
                xids += [{"xid": None, "name": "fallen off the bus", "pci": f.pci, "line": f.line,
                          "message": "GPU has fallen off the bus"} for f in item.kernel.fallen_off
                         if not any(x.pci == f.pci and x.xid == 79 for x in item.kernel.xids)]  # fmt: skip
            if item.nvsmi is not None:
                smi += nvsmi.excerpt(item.nvsmi)
        out.append(NodeEvidence(node, tuple(conds), tuple(evs), tuple(xids), tuple(smi), gpus))
    return tuple(out)
