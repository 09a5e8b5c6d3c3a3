"""Criterion 0: the cluster, its node set and its software are the ones of the agreement."""

from __future__ import annotations

from collections.abc import Sequence

from acceptance.baseline import ClusterConditions, NodeSpec
from acceptance.clusters.base import ClusterInventory, Leftover, NodeInfo
from acceptance.judge.verdict import Figure, Status, Verdict


def conditions_of(inventory: ClusterInventory, nodes: Sequence[str], gpus_per_node: int) -> ClusterConditions:
    """Today's cluster conditions, read from the agreement's nodes (the first one that answers)."""
    infos = [n for n in (inventory.node(name) for name in nodes) if n is not None]
    first = infos[0] if infos else None

    def common(values: list[str | None]) -> str | None:
        seen = {v for v in values if v}
        return seen.pop() if len(seen) == 1 else (", ".join(sorted(seen)) if seen else None)

    return ClusterConditions(
        nodes=tuple(n.name for n in infos),
        kubernetes_version=inventory.server_version or None,
        node_spec=NodeSpec(
            gpu_product=common([_product(n) for n in infos]),
            gpus_per_node=gpus_per_node if first is None else max(n.allocatable_gpus for n in infos),
            driver_version=common([n.driver_version for n in infos]),
            cuda_version=common([n.cuda_version for n in infos]),
            os_image=common([n.os_image for n in infos]),
        ),
    )


def _product(node: NodeInfo) -> str | None:
    product = node.gpu_product
    return product.replace("-", " ") if product else None


def judge_nodes(inventory: ClusterInventory, nodes: Sequence[str], gpus_per_node: int) -> Verdict:
    """Every node of the agreement is present, Ready, schedulable, with its GPUs allocatable."""
    problems: list[str] = []
    figures: dict[str, Figure] = {"nodes_expected": len(nodes), "gpus_per_node": gpus_per_node}
    for name in nodes:
        node = inventory.node(name)
        if node is None:
            problems.append(f"{name}: not in the cluster")
            figures[f"{name}.state"] = "missing"
            continue
        state = []
        if not node.ready:
            why = node.conditions.get("Ready", "")
            state.append("NotReady" + (f" ({why})" if why and why != "False" else ""))
        if node.unschedulable:
            state.append("cordoned")
        if node.allocatable_gpus < gpus_per_node:
            state.append(f"{node.allocatable_gpus} of {gpus_per_node} GPUs allocatable")
        figures[f"{name}.state"] = ", ".join(state) or "ready"
        figures[f"{name}.gpus_allocatable"] = node.allocatable_gpus
        if state:
            problems.append(f"{name}: {', '.join(state)}")
    figures["nodes_ok"] = len(nodes) - len(problems)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return Verdict(
            Status.FAIL,
            "node set",
            f"node set: {problems[0]}{more}; the agreement needs all {len(nodes)} nodes Ready with "
            f"{gpus_per_node} GPUs each — repair or uncordon before accepting",
            figures,
            tuple(problems),
        )
    return Verdict(
        Status.PASS,
        "node set",
        f"node set: all {len(nodes)} nodes Ready, schedulable, {gpus_per_node} GPUs allocatable each",
        figures,
    )


def platform(version: str) -> str:
    """What the cluster runs on, in words: ``Kubernetes v1.30.10`` for an API server's version, else the
    backend's own words (``slurm-wlm 22.05.8``, ``none (bare metal over SSH)``)."""
    return f"Kubernetes {version}" if version[:1] == "v" and version[1:2].isdigit() else version


def judge_versions(now: ClusterConditions, then: ClusterConditions | None) -> Verdict:
    """Driver, CUDA, Kubernetes and node spec equal the baseline's (NCCL and DCGM: their criteria)."""
    spec = now.node_spec
    figures: dict[str, Figure] = {
        "kubernetes_version": now.kubernetes_version,
        "gpu_product": spec.gpu_product,
        "gpus_per_node": spec.gpus_per_node,
        "driver_version": spec.driver_version,
        "cuda_version": spec.cuda_version,
        "os_image": spec.os_image,
    }
    described = (
        f"{spec.gpu_product} x{spec.gpus_per_node}, driver {spec.driver_version}, CUDA {spec.cuda_version}, "
        f"{platform(now.kubernetes_version or 'unknown')}"
    )
    if then is None:
        return Verdict(Status.PASS, "versions", f"versions recorded for the baseline: {described}", figures)
    differences = now.differences(then)
    if differences:
        more = f" (and {len(differences) - 1} more)" if len(differences) > 1 else ""
        return Verdict(
            Status.FAIL,
            "versions",
            f"versions: {differences[0]}{more}; results would not be comparable — restore the agreed versions "
            "or record a new baseline with both sides",
            figures,
            tuple(differences),
        )
    return Verdict(Status.PASS, "versions", f"versions as at handover: {described}", figures)


def judge_leftovers(leftovers: Sequence[Leftover]) -> Verdict:
    """No other run's object is on the cluster: another run using it now, or what a crashed run left."""
    live = {o.run_id: o.live_until for o in leftovers if o.live_until is not None}
    ended = [o for o in leftovers if o.live_until is None]
    figures: dict[str, Figure] = {"leftover_objects": len(ended), "live_runs": len(live)}
    evidence = tuple(str(o) for o in leftovers)
    if live:
        runs = ", ".join(f"{run} (lease until {until:%Y-%m-%dT%H:%M:%SZ})" for run, until in sorted(live.items()))
        return Verdict(
            Status.FAIL,
            "leftovers",
            f"leftovers: another run is using this cluster now: {runs}; wait for it to end (a crashed run's "
            "lease expires on its own, then `acceptance cleanup --cluster NAME` removes what it left)",
            figures,
            evidence,
        )
    if ended:
        shown = ", ".join(o.object for o in ended[:5]) + (f" (+{len(ended) - 5} more)" if len(ended) > 5 else "")
        return Verdict(
            Status.FAIL,
            "leftovers",
            f"leftovers: {len(ended)} objects of earlier runs remain ({shown}); remove them with "
            "`acceptance cleanup --cluster NAME`",
            figures,
            evidence,
        )
    return Verdict(Status.PASS, "leftovers", "leftovers: none from other runs", figures)
