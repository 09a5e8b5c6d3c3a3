"""``kubectl describe node NODE`` and ``kubectl get events`` as a simulated node's operator pastes them.

The text follows kubectl's own layout: a describe block (``Name:``, ``Taints:``, ``Unschedulable:``, a
``Conditions:`` table with RFC 1123 times, ``Capacity:``/``Allocatable:``, ``Events:``) and events tables
whose columns follow the command's flags (``-A`` adds NAMESPACE first, ``-o wide`` the SUBOBJECT, SOURCE,
FIRST SEEN and COUNT columns), ages relative (``115m``). Each paste picks a shape per seed, as people
paste kubectl: the Conditions table padded with blanks or, as kubectl 1.7 printed it, with TABs after a
blank, with or without its ``Conditions:`` heading, and the describe's Events rows without their header.
``SIM_KUBECTL_SHAPE`` (``tabs,no-heading,no-events-header``) names one.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from acceptance.errors import UsageError
from acceptance.sim.model.cluster import GPUS_PER_NODE, SimCluster
from acceptance.sim.model.faults import FaultSet

ENV = "SIM_KUBECTL_SHAPE"
NOW = datetime(2026, 11, 28, 11, 0, 0)  # the simulated moment the operator ran kubectl
_PARTS = ("tabs", "no-heading", "no-events-header")


@dataclass(frozen=True)
class KubectlShape:
    tabs: bool = False  # Conditions cells separated by a blank and a TAB (kubectl 1.7)
    heading: bool = True  # the ``Conditions:`` heading is in the paste
    events_header: bool = True  # the describe's Events table keeps its header lines


def choose(seed: int, env: Mapping[str, str] | None = None) -> KubectlShape:
    named = (env or {}).get(ENV)
    if named is not None:
        parts = {p.strip() for p in named.split(",") if p.strip()}
        unknown = parts - set(_PARTS)
        if unknown:
            raise UsageError(f"{ENV}={named!r}: {', '.join(sorted(unknown))} is not one of {', '.join(_PARTS)}")
        return KubectlShape("tabs" in parts, "no-heading" not in parts, "no-events-header" not in parts)
    r = random.Random(seed)
    return KubectlShape(r.random() < 0.5, r.random() < 0.5, r.random() < 0.5)


def _rfc1123(t: datetime) -> str:
    return t.strftime("%a, %d %b %Y %H:%M:%S +0000")


def _age(seconds: float) -> str:
    minutes = int(seconds // 60)
    return f"{minutes}m" if minutes < 180 else f"{minutes // 60}h"


@dataclass(frozen=True)
class _Event:
    type: str
    reason: str
    source: str
    message: str
    age_s: float
    obj: str
    count: int = 1


def _events(faults: FaultSet, node: str) -> list[_Event]:
    out = [_Event("Normal", "Starting", "kubelet", "Starting kubelet.", 6900.0, f"node/{node}")]
    if not faults.node_ready(node):
        out.append(_Event("Normal", "NodeNotReady", "node-controller", f"Node {node} status is now: NodeNotReady",
                          6600.0, f"node/{node}"))  # fmt: skip
    for f in faults.faults:
        if f.node == node and f.kind == "gpu-xid":
            out.append(_Event("Warning", "GPUFallenOffTheBus", "kernel-monitor",
                              f"NVRM: Xid (PCI:0000:{0x18 + 0x10 * f.index:02x}:00): 79, GPU has fallen off the bus.",
                              6700.0, f"node/{node}", 3))  # fmt: skip
    return out


def describe_node(cluster: SimCluster, faults: FaultSet, node: str, shape: KubectlShape) -> str:
    cluster.node(node)  # an unknown node is the simulator's usage error
    ready = faults.node_ready(node)
    beat, moved = NOW - timedelta(seconds=40), NOW - timedelta(days=5)
    rows = [(t, "False", f"KubeletHasSufficient{r}", m) for t, r, m in (
        ("MemoryPressure", "Memory", "kubelet has sufficient memory available"),
        ("DiskPressure", "Disk", "kubelet has no disk pressure"),
        ("PIDPressure", "PID", "kubelet has sufficient PID available"))]  # fmt: skip
    rows.append(("Ready", "True", "KubeletReady", "kubelet is posting ready status") if ready
                else ("Ready", "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status."))  # fmt: skip
    head = ("Type", "Status", "LastHeartbeatTime", "LastTransitionTime", "Reason", "Message")
    rule = tuple("-" * len(h) for h in head)
    cells = [head, rule, *((t, s, _rfc1123(beat), _rfc1123(moved if s != "Unknown" else beat), r, m)
                           for t, s, r, m in rows)]  # fmt: skip
    if shape.tabs:
        table = ["  " + " \t".join(c) for c in cells]
    else:
        widths = [max(len(c[i]) for c in cells) for i in range(len(head))]
        table = ["  " + "   ".join(v.ljust(w) for v, w in zip(c, widths, strict=True)).rstrip() for c in cells]
    gpus = str(GPUS_PER_NODE)
    taints = "nvidia.com/gpu=present:NoSchedule"
    if not ready:
        taints = "node.kubernetes.io/unreachable:NoExecute\n                    " + taints
    out = [
        f"Name:               {node}",
        "Roles:              <none>",
        f"Labels:             kubernetes.io/hostname={node}",
        "CreationTimestamp:  Mon, 23 Nov 2026 08:00:00 +0000",
        f"Taints:             {taints}",
        "Unschedulable:      false",
        *(["Conditions:"] if shape.heading else []),
        *table,
        "Addresses:",
        f"  Hostname:    {node}",
        "Capacity:",
        f"  nvidia.com/gpu:     {gpus}",
        "Allocatable:",
        f"  nvidia.com/gpu:     {gpus if ready else '0'}",
        "Events:",
    ]
    events = _events(faults, node)
    ev_head = ("Type", "Reason", "Age", "From", "Message")
    ev_rows = [(e.type, e.reason, _age(e.age_s) if e.count == 1 else f"{_age(e.age_s)} (x{e.count} over "
                f"{_age(e.age_s)})", e.source, e.message) for e in events]  # fmt: skip
    ev_cells = [ev_head, tuple("-" * len(h) for h in ev_head), *ev_rows] if shape.events_header else ev_rows
    widths = [max(len(c[i]) for c in (ev_head, *ev_rows)) for i in range(len(ev_head))]
    out += ["  " + "  ".join(v.ljust(w) for v, w in zip(c, widths, strict=True)).rstrip() for c in ev_cells]
    return "\n".join(out) + "\n"


def get_events(cluster: SimCluster, faults: FaultSet, argv: Sequence[str]) -> str:
    """``kubectl get events [-A] [-o wide]``: the nodes' events, columns by the flags as kubectl prints them."""
    all_ns = "-A" in argv or "--all-namespaces" in argv
    wide = any(a in {"wide", "-owide", "--output=wide"} for a in argv)
    rows = [e for n in cluster.nodes for e in _events(faults, n.name)]
    rows.sort(key=lambda e: -e.age_s)
    head: tuple[str, ...] = ("LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE")
    if wide:
        head = ("LAST SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE", "MESSAGE", "FIRST SEEN", "COUNT",
                "NAME")  # fmt: skip
    if all_ns:
        head = ("NAMESPACE", *head)
    cells: list[tuple[str, ...]] = [head]
    for e in rows:
        base: tuple[str, ...] = (_age(e.age_s - 60 * (e.count - 1)), e.type, e.reason, e.obj)
        if wide:
            name = f"{e.obj.split('/')[-1]}.{hashlib.sha256((e.reason + e.obj).encode()).hexdigest()[:12]}"
            base = (*base, "", f"{e.source}, {e.obj.split('/')[-1]}", e.message, _age(e.age_s), str(e.count), name)
        else:
            base = (*base, e.message)
        cells.append(("default", *base) if all_ns else base)
    widths = [max(len(c[i]) for c in cells) for i in range(len(head))]
    return "\n".join("   ".join(v.ljust(w) for v, w in zip(c, widths, strict=True)).rstrip() for c in cells) + "\n"
