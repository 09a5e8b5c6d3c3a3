"""The simulated H200 cluster: nodes, GPUs, NICs, leaf groups and software versions.

Everything here is a pure function of a seed: the same seed gives the same GPU UUIDs,
serials and PCI bus ids, so a baseline recorded on the simulator stays valid for it.
Randomness anywhere in the simulator comes from `rng(*parts)`, a `random.Random`
seeded by a hash of its parts (never the wall clock, never global state).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property

from acceptance.errors import UsageError
from acceptance.sim.runtime import NodeSpec

GPUS_PER_NODE = 8
NICS_PER_NODE = 8
NIC_GBPS = 400
GPU_NAME = "NVIDIA H200"
GPU_PRODUCT_LABEL = "NVIDIA-H200"
GPU_DEVICE_ID = "2335"
GPU_MEMORY_MIB = 143771
# cudaMemGetInfo free bytes nccl-tests sees on an idle H200 (sizes its maxBytes cap)
GPU_FREE_BYTES = 145_814_913_022
MIN_NODES, MAX_NODES = 2, 1024
LEAF_LABEL = "acceptance.sim/leaf-group"
SPINE_LABEL = "acceptance.sim/spine"

# Two real 8-GPU board layouts (PCI bus numbers of GPU 0..7); a cluster uses one.
_BUS_LAYOUTS: tuple[tuple[int, ...], ...] = (
    (0x1B, 0x3C, 0x4B, 0x5C, 0x9A, 0xBB, 0xCD, 0xDC),
    (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB),
)


def derive_seed(*parts: object) -> int:
    """A 64-bit seed from any printable parts (stable across processes and Python versions)."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big")


def rng(*parts: object) -> random.Random:
    """A private random generator for one purpose, e.g. ``rng(seed, "nccl", call, node)``."""
    return random.Random(derive_seed(*parts))


@dataclass(frozen=True)
class Versions:
    """Software the cluster runs; what preflight compares with the agreement."""

    driver: str = "570.133.20"
    cuda: str = "12.8"
    nccl: str = "2.26.5"
    nccl_tests: str = "2.17.8"
    dcgm: str = "4.2.3"
    kubernetes: str = "v1.30.11"
    os_image: str = "Ubuntu 22.04.5 LTS"
    kernel: str = "5.15.0-131-generic"
    container_runtime: str = "containerd://1.7.27"

    @property
    def nccl_code(self) -> int:
        """NCCL's integer version as nccl-tests prints it (2.26.5 -> 22605)."""
        major, minor, patch = (int(x) for x in self.nccl.split(".")[:3])
        return major * 10000 + minor * 100 + patch

    @property
    def cuda_code(self) -> int:
        """CUDA as NCCL INFO prints cudaDriverVersion (12.8 -> 12080)."""
        major, minor = (int(x) for x in self.cuda.split(".")[:2])
        return major * 1000 + minor * 10

    def as_dict(self) -> dict[str, str]:
        return {
            "driver": self.driver,
            "cuda": self.cuda,
            "nccl": self.nccl,
            "nccl_tests": self.nccl_tests,
            "dcgm": self.dcgm,
            "kubernetes": self.kubernetes,
            "os_image": self.os_image,
        }

    def with_overrides(self, overrides: Mapping[str, str]) -> Versions:
        known = set(self.__dataclass_fields__)
        bad = sorted(set(overrides) - known)
        if bad:
            raise UsageError(f"unknown software version key(s) {bad}; known: {sorted(known)}")
        return replace(self, **{k: str(v) for k, v in overrides.items()})


@dataclass(frozen=True)
class Gpu:
    index: int
    uuid: str
    serial: str
    bus: int

    @property
    def busid(self) -> str:
        """The `[%04x:%02x:%02x]` form nccl-tests prints (domain:bus:device)."""
        return f"0000:{self.bus:02x}:00"

    @property
    def pci_bus_id(self) -> str:
        """The NVML form (``00000000:1B:00.0``)."""
        return f"00000000:{self.bus:02X}:00.0"


@dataclass(frozen=True)
class Nic:
    index: int
    name: str
    rail: int
    gbps: int = NIC_GBPS


@dataclass(frozen=True)
class Node:
    name: str
    index: int
    leaf: int
    gpus: tuple[Gpu, ...]
    nics: tuple[Nic, ...]


@dataclass(frozen=True)
class SimCluster:
    """A whole cluster. `nodes_per_leaf` nodes share a leaf switch group; leaves meet at the spine."""

    seed: int
    nodes: tuple[Node, ...]
    nodes_per_leaf: int
    versions: Versions = field(default_factory=Versions)

    @cached_property
    def _by_name(self) -> dict[str, Node]:
        return {n.name: n for n in self.nodes}

    def node(self, name: str) -> Node:
        found = self._by_name.get(name)
        if found is not None:
            return found
        raise UsageError(f"unknown node {name!r}; the simulated cluster has {self.describe_nodes()}")

    def has_node(self, name: str) -> bool:
        return name in self._by_name

    def describe_nodes(self) -> str:
        first, last = self.nodes[0].name, self.nodes[-1].name
        return f"{len(self.nodes)} nodes {first} ... {last}"

    def leaf_of(self, name: str) -> int:
        return self.node(name).leaf

    @property
    def leaves(self) -> int:
        return self.nodes[-1].leaf + 1


def _uuid(r: random.Random) -> str:
    a, b, c, d, e = (
        r.getrandbits(32),
        r.getrandbits(16),
        r.getrandbits(16),
        r.getrandbits(16),
        r.getrandbits(48),
    )
    return f"GPU-{a:08x}-{b:04x}-{c:04x}-{d:04x}-{e:012x}"


def node_name(index: int, count: int) -> str:
    """``sim-node-01`` ... (zero-padded to the width of the node count, at least 2)."""
    return f"sim-node-{index + 1:0{max(2, len(str(count)))}d}"


def default_nodes_per_leaf(nodes: int) -> int:
    """8 for small clusters (so 16 nodes span two leaves and the spine matters), 16 beyond 64."""
    return 8 if nodes <= 64 else 16


def build_cluster(
    nodes: int = 16,
    seed: int = 0,
    nodes_per_leaf: int | None = None,
    versions: Versions | None = None,
) -> SimCluster:
    if not MIN_NODES <= nodes <= MAX_NODES:
        raise UsageError(f"a simulated cluster has {MIN_NODES}..{MAX_NODES} nodes, not {nodes}")
    per_leaf = nodes_per_leaf or default_nodes_per_leaf(nodes)
    if per_leaf < 1:
        raise UsageError(f"nodes_per_leaf must be at least 1, not {per_leaf}")
    layout = _BUS_LAYOUTS[derive_seed(seed, "layout") % len(_BUS_LAYOUTS)]
    built = []
    for i in range(nodes):
        name = node_name(i, nodes)
        r = rng(seed, "node", name)
        gpus = tuple(
            Gpu(
                index=g,
                uuid=_uuid(r),
                serial=f"1655{r.randrange(10**9):09d}",
                bus=layout[g],
            )
            for g in range(GPUS_PER_NODE)
        )
        nics = tuple(Nic(index=k, name=f"mlx5_{k}", rail=k) for k in range(NICS_PER_NODE))
        built.append(Node(name=name, index=i, leaf=i // per_leaf, gpus=gpus, nics=nics))
    return SimCluster(seed=seed, nodes=tuple(built), nodes_per_leaf=per_leaf, versions=versions or Versions())


def node_spec(cluster: SimCluster, node: Node, ready: bool = True, gpus: int = GPUS_PER_NODE) -> NodeSpec:
    """What the Kubernetes API emulator serves for one node (GPU feature discovery labels included)."""
    v = cluster.versions
    labels = {
        "kubernetes.io/hostname": node.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": "sim-h200-8x",
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": GPU_PRODUCT_LABEL,
        "nvidia.com/gpu.count": str(GPUS_PER_NODE),
        "nvidia.com/gpu.memory": str(GPU_MEMORY_MIB),
        "nvidia.com/gpu.family": "hopper",
        "nvidia.com/cuda.driver-version.full": v.driver,
        "nvidia.com/cuda.runtime-version.full": v.cuda,
        "feature.node.kubernetes.io/rdma.available": "true",
        LEAF_LABEL: f"leaf-{node.leaf + 1:02d}",
        SPINE_LABEL: "spine-01",
        "acceptance.sim/simulated": "true",
    }
    return NodeSpec(
        name=node.name,
        labels=labels,
        gpus=gpus,
        ready=ready,
        kubelet_version=v.kubernetes,
        os_image=v.os_image,
        kernel_version=v.kernel,
        container_runtime_version=v.container_runtime,
        rdma_resources={"rdma/ib": NICS_PER_NODE},
    )
