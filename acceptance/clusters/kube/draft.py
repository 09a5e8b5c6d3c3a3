"""A first profile drafted from what a live Kubernetes cluster says (`acceptance init`): facts in, YAML text out.

Every fact the cluster gives is written as a value (node set, GPUs, RDMA resources, taints);
what only the two parties can agree on (DCGM level, the nccl-tests of the handover, margins,
the smoke job) is a commented default to review. What could not be found is said, with what
to do about it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from acceptance.clusters.drafting import agreement_lines, common, env_and_nodes_lines, most_gpus, q, signers_lines
from acceptance.clusters.kube.discover import KubeFacts, NodeFacts

GPU_RESOURCE = "nvidia.com/gpu"
RDMA_PREFIXES = ("rdma/", "nvidia.com/hostdev", "nvidia.com/rdma", "nvidia.com/mlnx", "mellanox.com/")
MPI_OPERATOR_INSTALL = (
    "kubectl apply --server-side -f "
    "https://raw.githubusercontent.com/kubeflow/mpi-operator/v0.6.0/deploy/v2beta1/mpi-operator.yaml"
)
DEFAULT_IMAGES = {
    "nccl": "ghcr.io/coreweave/nccl-tests:12.8.1-devel-ubuntu22.04-nccl2.26.2-1-0708d2e",
    "dcgm": "nvcr.io/nvidia/cloud-native/dcgm:4.2.3-1-ubuntu22.04",
}


def _gpus(node: NodeFacts) -> int:
    try:
        return int(node.allocatable.get(GPU_RESOURCE, "0"))
    except ValueError:
        return 0


def draft_kube_profile(
    name: str, facts: KubeFacts, *, namespace: str, context: str | None, kubeconfig: str | None
) -> tuple[str, tuple[str, ...]]:
    """The profile text for cluster `name` (its GPU nodes are the agreement's node set), and the notes."""
    notes: list[str] = []
    gpu_nodes = [n for n in facts.nodes if _gpus(n) > 0]
    if not gpu_nodes:
        raise ValueError(f"no node with allocatable {GPU_RESOURCE} found ({len(facts.nodes)} nodes listed)")
    not_ready = [n.name for n in gpu_nodes if not n.ready]
    if not_ready:
        notes.append(
            f"not Ready now (kept in the node set; preflight will fail until they are): {', '.join(not_ready)}"
        )
    gpus, odd = most_gpus({n.name: _gpus(n) for n in gpu_nodes})
    if odd:
        notes.append(f"most GPU nodes have {gpus} allocatable GPUs, these differ: {', '.join(odd)}")
    product, others = common([n.labels.get("nvidia.com/gpu.product") for n in gpu_nodes])
    if others:
        notes.append(f"GPU products differ: {product} on most nodes, also {', '.join(others)}")
    if product is None:
        notes.append("no nvidia.com/gpu.product label: GPU feature discovery is not running; gpu_product left out")
    driver, _ = common([n.labels.get("nvidia.com/cuda.driver-version.full") for n in gpu_nodes])
    cuda, _ = common([n.labels.get("nvidia.com/cuda.runtime-version.full") for n in gpu_nodes])
    rdma = _rdma(gpu_nodes, notes)
    tolerations = _tolerations(gpu_nodes)
    if "v2beta1" not in facts.mpijob_versions:
        found = f" (the cluster serves kubeflow.org/{', '.join(facts.mpijob_versions)} MPIJobs, which cannot be used)"
        notes.append(
            "no Kubeflow MPI operator v2beta1 API" + (found if facts.mpijob_versions else "")
            + f": nccl-tests and the smoke job need it; install it with `{MPI_OPERATOR_INSTALL}`"
        )  # fmt: skip
    if not facts.namespace_exists:
        notes.append(
            f"namespace {namespace} does not exist (or cannot be read): `kubectl create namespace {namespace}`"
        )
    summary = f"{len(gpu_nodes)} x {gpus} {product or 'GPU'} nodes"
    lines = [
        f"# Drafted by `acceptance init` from the live cluster (Kubernetes {facts.server_version or 'unknown'},",
        f"# {len(gpu_nodes)} GPU nodes). Facts read from the cluster are values; the agreement's choices are",
        "# commented defaults: review them with the other party before recording the handover baseline.",
        f"cluster: {q(name)}",
        f"description: {q(summary)}",
        "backend: kube",
        *signers_lines(),
        "",
        "kube:",
        *([f"  kubeconfig: {q(kubeconfig)}"] if kubeconfig else []),
        *([f"  context: {q(context)}"] if context else []),
        f"  namespace: {q(namespace)}",
        "  images:                  # pin the images both parties agreed on",
        *(f"    {k}: {q(v)}" for k, v in DEFAULT_IMAGES.items()),
        "    # smoke: the customer's training image (criteria 3 and 4)",
        f"  gpu_resource: {GPU_RESOURCE}",
    ]
    if rdma:
        lines.append("  rdma_resources:          # allocatable on every GPU node")
        lines += [f"    {q(k)}: {v}" for k, v in rdma.items()]
    else:
        lines.append("  # rdma_resources: {rdma/ib: 8}   # none found: see the notes")
    if tolerations:
        lines.append("  tolerations:             # the GPU nodes' taints")
        for tol in tolerations:
            lines.append(f"    - {q(dict(tol))}")
    shown = product.replace("-", " ") if product else None
    lines += env_and_nodes_lines(gpus, shown, driver, cuda, [n.name for n in gpu_nodes])
    lines += agreement_lines()
    return "\n".join(lines) + "\n", tuple(notes)


def _rdma(nodes: Sequence[NodeFacts], notes: list[str]) -> dict[str, int]:
    """RDMA device resources allocatable on every GPU node (the smallest count)."""
    found: dict[str, int] = {}
    for key in sorted({k for n in nodes for k in n.allocatable if k.startswith(RDMA_PREFIXES)}):
        amounts = []
        for node in nodes:
            try:
                amounts.append(int(node.allocatable.get(key, "0")))
            except ValueError:
                amounts.append(0)
        if min(amounts) > 0:
            found[key] = min(amounts)
        else:
            missing = [n.name for n, a in zip(nodes, amounts, strict=True) if a == 0]
            notes.append(f"{key} is allocatable on some GPU nodes only (not on {', '.join(missing[:5])})")
    if not found:
        notes.append(
            "no RDMA resource (rdma/*, nvidia.com/hostdev) is allocatable on the GPU nodes: pods would get no "
            "InfiniBand/RoCE device and NCCL would fall back to TCP sockets; install the RDMA device plugin "
            "(or the network operator), then set kube.rdma_resources and kube.env NCCL_IB_HCA / NCCL_SOCKET_IFNAME"
        )
    return found


def _tolerations(nodes: Sequence[NodeFacts]) -> list[Mapping[str, str]]:
    """One toleration per distinct taint of the GPU nodes that would keep the suite's pods away."""
    out: list[Mapping[str, str]] = []
    for node in nodes:
        for taint in node.taints:
            if taint.get("effect") not in ("NoSchedule", "NoExecute"):
                continue
            if taint.get("key", "").startswith("node.kubernetes.io/"):
                continue  # the node's own condition (not-ready, unschedulable): not to be tolerated
            tol = {"key": taint["key"], "operator": "Exists", "effect": taint["effect"]}
            if tol not in out:
                out.append(tol)
    return out
