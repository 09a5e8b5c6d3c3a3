"""Placement of pods on emulated nodes, with kube-scheduler's filters and failure message.

Filters, in the default profile's order: NodeUnschedulable, TaintToleration,
NodeAffinity (nodeSelector + required node affinity), NodeResourcesFit (extended
resources such as ``nvidia.com/gpu``), InterPodAffinity (required anti-affinity).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from acceptance.sim.kubeapi.store import Obj, parse_label_selector

HOSTNAME = "kubernetes.io/hostname"
GPU = "nvidia.com/gpu"
COUNTED = ("cpu", "memory", "pods", "ephemeral-storage", "hugepages-1Gi", "hugepages-2Mi")


def pod_requests(pod: Mapping[str, Any]) -> dict[str, int]:
    """Integer requests of extended resources (nvidia.com/gpu, rdma/ib ...) summed over containers."""
    total: Counter[str] = Counter()
    for c in pod["spec"].get("containers", ()):
        res = c.get("resources") or {}
        amounts = {**(res.get("limits") or {}), **(res.get("requests") or {})}
        for name, value in amounts.items():
            if name in COUNTED:
                continue
            try:
                total[name] += int(value)
            except (TypeError, ValueError):
                continue
    return dict(total)


_SETS: dict[int, tuple[list[str], frozenset[str]]] = {}


def _values(expr: Mapping[str, Any]) -> frozenset[str]:
    """The expression's values as a set, memoised per list object (a pod's 1024 hostnames are checked often)."""
    values = expr.get("values") or []
    cached = _SETS.get(id(values))
    if cached is None or cached[0] is not values:
        if len(_SETS) > 4096:
            _SETS.clear()
        cached = _SETS[id(values)] = (values, frozenset(values))
    return cached[1]


def _match_expression(labels: Mapping[str, str], expr: Mapping[str, Any]) -> bool:
    key, op, values = expr.get("key", ""), expr.get("operator", "In"), _values(expr)
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt") and key in labels:
        try:
            a, b = int(labels[key]), int(next(iter(values)))
        except (ValueError, StopIteration):
            return False
        return a > b if op == "Gt" else a < b
    return False


def matches_node_affinity(pod: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    labels = node["metadata"].get("labels") or {}
    spec = pod["spec"]
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if not required:
        return True
    fields = {"metadata.name": node["metadata"]["name"]}
    for term in required.get("nodeSelectorTerms") or ():
        exprs_ok = all(_match_expression(labels, e) for e in term.get("matchExpressions") or ())
        fields_ok = all(_match_expression(fields, e) for e in term.get("matchFields") or ())
        if exprs_ok and fields_ok:
            return True
    return False


def _tolerates(tolerations: Sequence[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    for tol in tolerations:
        if tol.get("effect") and tol["effect"] != taint.get("effect"):
            continue
        if tol.get("operator", "Equal") == "Exists":
            if not tol.get("key") or tol["key"] == taint.get("key"):
                return True
        elif tol.get("key") == taint.get("key") and tol.get("value", "") == taint.get("value", ""):
            return True
    return False


def candidate_names(pod: Mapping[str, Any]) -> set[str] | None:
    """Node hostnames a pod is pinned to (nodeSelector or an ``In`` affinity on hostname), if any."""
    spec = pod["spec"]
    pinned = (spec.get("nodeSelector") or {}).get(HOSTNAME)
    if pinned:
        return {pinned}
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    terms = (required or {}).get("nodeSelectorTerms") or ()
    names: set[str] = set()
    for term in terms:
        found = [
            e for e in term.get("matchExpressions") or () if e.get("key") == HOSTNAME and e.get("operator") == "In"
        ]
        if not found:
            return None
        names.update(found[0].get("values") or ())
    return names or None


def _allocatable(node: Mapping[str, Any], resource: str) -> int:
    try:
        return int(((node.get("status") or {}).get("allocatable") or {}).get(resource, 0))
    except (TypeError, ValueError):
        return 0


class Placement:
    """Free capacity and pods per node; the scheduler's view of the cluster."""

    def __init__(self) -> None:
        self.used: dict[str, Counter[str]] = {}
        self.pods_on: dict[str, dict[str, Mapping[str, str]]] = {}  # node -> pod key -> labels
        self.bound: dict[str, tuple[str, dict[str, int]]] = {}  # pod key -> (node, requests)
        self._alloc: dict[str, dict[str, int]] = {}  # node -> allocatable (nodes never change capacity here)
        self.gpu_full: set[str] = set()  # nodes whose GPUs are all taken

    def bind(self, node: str, pod_key: str, pod: Mapping[str, Any]) -> None:
        requests = pod_requests(pod)
        self.used.setdefault(node, Counter()).update(requests)
        self.pods_on.setdefault(node, {})[pod_key] = dict(pod["metadata"].get("labels") or {})
        self.bound[pod_key] = (node, requests)
        if self.used[node].get(GPU, 0) >= self._alloc.get(node, {}).get(GPU, 1 << 30):
            self.gpu_full.add(node)

    def release(self, pod_key: str) -> bool:
        """Free what a pod held; False when it held nothing."""
        if pod_key not in self.bound:
            return False
        node, requests = self.bound.pop(pod_key)
        self.pods_on.get(node, {}).pop(pod_key, None)
        self.used.setdefault(node, Counter()).subtract(requests)
        self.gpu_full.discard(node)
        return True

    def _anti_affinity_ok(self, pod: Mapping[str, Any], node: str) -> bool:
        anti = ((pod["spec"].get("affinity") or {}).get("podAntiAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        ) or ()
        for term in anti:
            if term.get("topologyKey") != HOSTNAME:
                continue
            sel = term.get("labelSelector") or {}
            parts = [f"{k}={v}" for k, v in (sel.get("matchLabels") or {}).items()]
            for e in sel.get("matchExpressions") or ():
                parts.append(f"{e['key']} {e['operator'].lower()} ({','.join(e.get('values') or ())})")
            pred = parse_label_selector(",".join(parts))
            if any(pred(labels) for labels in self.pods_on.get(node, {}).values()):
                return False
        return True

    def reason(self, pod: Mapping[str, Any], node: Obj) -> str | None:
        """Why `pod` cannot go to `node` (the scheduler's wording), or None when it fits."""
        name = node["metadata"]["name"]
        spec = node.get("spec") or {}
        if spec.get("unschedulable") and not _tolerates(
            pod["spec"].get("tolerations") or (),
            {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
        ):
            return "node(s) were unschedulable"
        for taint in spec.get("taints") or ():
            if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerates(
                pod["spec"].get("tolerations") or (), taint
            ):
                value = taint.get("value", "")
                return f"node(s) had untolerated taint {{{taint['key']}: {value}}}"
        if not matches_node_affinity(pod, node):
            return "node(s) didn't match Pod's node affinity/selector"
        used = self.used.get(name, Counter())
        for res, amount in sorted(pod_requests(pod).items()):
            if amount > _allocatable(node, res) - used.get(res, 0):
                return f"Insufficient {res}"
        if not self._anti_affinity_ok(pod, name):
            return "node(s) didn't match pod anti-affinity rules"
        return None

    def choose(self, pod: Mapping[str, Any], nodes: Mapping[str, Obj]) -> tuple[str | None, str]:
        """The node for `pod`, or None and kube-scheduler's FailedScheduling message."""
        names = candidate_names(pod)
        order = sorted(names & nodes.keys()) if names is not None else sorted(nodes)
        wanted = list(pod_requests(pod).items())
        if any(r == GPU and n > 0 for r, n in wanted):  # a pod asking for no GPU fits beside a GPU-full one
            order = [n for n in order if n not in self.gpu_full]
        for name in order:
            used = self.used.get(name)
            if used:  # cheap test first: most pinned candidates are simply full
                have = self._alloc.get(name)
                if have is None:
                    have = self._alloc[name] = {r: _allocatable(nodes[name], r) for r, _ in wanted}
                if any(used.get(r, 0) + n > have.get(r, _allocatable(nodes[name], r)) for r, n in wanted):
                    continue
            if self.reason(pod, nodes[name]) is None:
                self._alloc.setdefault(name, {GPU: _allocatable(nodes[name], GPU)}).setdefault(
                    GPU, _allocatable(nodes[name], GPU)
                )
                return name, ""
        return None, self.failure_message(pod, nodes)

    def failure_message(self, pod: Mapping[str, Any], nodes: Mapping[str, Obj]) -> str:
        counts: Counter[str] = Counter()
        for node in nodes.values():
            counts[self.reason(pod, node) or "node(s) were unschedulable"] += 1
        total = len(nodes)
        reasons = ", ".join(f"{n} {r}" for r, n in sorted(counts.items()))
        preempt_help = sum(n for r, n in counts.items() if r.startswith("Insufficient"))
        preempt: list[str] = []
        if preempt_help:
            preempt.append(f"{preempt_help} No preemption victims found for incoming pod")
        if total - preempt_help:
            preempt.append(f"{total - preempt_help} Preemption is not helpful for scheduling")
        return (
            f"0/{total} nodes are available: {reasons}. "
            f"preemption: 0/{total} nodes are available: {', '.join(preempt)}."
        )
