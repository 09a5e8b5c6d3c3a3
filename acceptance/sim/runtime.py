"""The seam between the Kubernetes API emulator and the simulated cluster.

The emulator's controller decides *where* a container runs (which pods on which
nodes); the simulator decides *what the tool prints* there. A pod's command is
handed over as argv, with the pod's environment and, for an MPI launcher, the
hosts of its hostfile resolved to the nodes their worker pods run on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Host:
    """One entry of an MPI hostfile: the worker pod's hostname, its node, its slots."""

    hostname: str
    node: str
    slots: int


@dataclass(frozen=True)
class ToolRun:
    """What a simulated command printed, its exit status, and how long it took.

    `duration_s` is simulated time; the emulator scales it to wall time.
    """

    stdout: str
    exit_code: int
    duration_s: float


@dataclass(frozen=True)
class NodeSpec:
    """A simulated node as Kubernetes sees it.

    `labels` include `kubernetes.io/hostname` and the GPU feature discovery labels
    (`nvidia.com/gpu.product`, `nvidia.com/gpu.count`, `nvidia.com/cuda.driver-version.full`,
    `nvidia.com/cuda.runtime-version.full` ...). `ready` False makes the node NotReady.
    """

    name: str
    labels: Mapping[str, str]
    gpus: int
    ready: bool
    kubelet_version: str
    os_image: str
    kernel_version: str
    container_runtime_version: str
    rdma_resources: Mapping[str, int]


class ToolRunner(Protocol):
    """Runs a container command on the simulated cluster.

    `node` is the node of the pod whose command this is (the launcher's node for an
    MPIJob launcher). `hosts` is empty for a plain pod and lists the hostfile's
    workers for an MPI launcher (`mpirun ... --hostfile /etc/mpi/hostfile ...`).
    """

    def run(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        node: str,
        hosts: Sequence[Host],
    ) -> ToolRun: ...

    def nodes(self) -> Sequence[NodeSpec]:
        """Nodes of the simulated cluster, in order, as the emulator serves them."""
        ...
