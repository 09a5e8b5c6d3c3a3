"""What the suite asks of a cluster backend, and what it gets back.

Workload specs say *what* to run (node set, GPUs, command, deadline); a backend turns
them into its own objects (Kubernetes manifests, SSH commands). A `RunResult` is a
frozen value: a failed or unschedulable workload is a result with a reason, never an
exception, so a verdict can be built from it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import TracebackType
from typing import Any, Literal, Protocol, Self

WorkloadKind = Literal["nccl", "dcgm", "smoke"]
RunStatus = Literal["succeeded", "failed", "timeout", "unschedulable", "error"]


@dataclass(frozen=True)
class NcclWorkload:
    """nccl-tests over `nodes`, one MPI worker per node with `gpus_per_node` ranks.

    `argv` is the test binary and its options (``all_reduce_perf -b 8 -e 8G ...``); the
    backend wraps it in ``mpirun -np <nodes*gpus> --hostfile ...`` and passes `env`.
    """

    name: str
    nodes: tuple[str, ...]
    gpus_per_node: int
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    deadline_s: float = 3600.0


@dataclass(frozen=True)
class DcgmWorkload:
    """``dcgmi diag`` (the full `argv`) on one node, holding `gpus` GPUs of it."""

    name: str
    node: str
    gpus: int
    argv: tuple[str, ...]
    deadline_s: float = 3600.0


@dataclass(frozen=True)
class SmokeWorkload:
    """The smoke run of the real job: MPI over `nodes` (a plain pod for one node)."""

    name: str
    nodes: tuple[str, ...]
    gpus_per_node: int
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    deadline_s: float = 3600.0


Workload = NcclWorkload | DcgmWorkload | SmokeWorkload


def workload_kind(workload: Workload) -> WorkloadKind:
    if isinstance(workload, NcclWorkload):
        return "nccl"
    if isinstance(workload, DcgmWorkload):
        return "dcgm"
    return "smoke"


@dataclass(frozen=True)
class Handle:
    """A submitted workload: its spec and the backend's objects (kind, name)."""

    workload: Workload
    objects: tuple[tuple[str, str], ...]
    manifests: tuple[Mapping[str, object], ...]
    submitted: datetime


@dataclass(frozen=True)
class ClusterEvent:
    """One event about a cluster object (a Kubernetes Event, a syslog line...)."""

    time: datetime | None
    object: str
    reason: str
    message: str
    type: str = "Normal"

    def as_dict(self) -> dict[str, str]:
        return {
            "time": self.time.isoformat() if self.time else "",
            "object": self.object,
            "reason": self.reason,
            "message": self.message,
            "type": self.type,
        }


@dataclass(frozen=True)
class RankPlacement:
    rank: int
    host: str
    pod: str | None
    node: str | None


@dataclass(frozen=True)
class RunResult:
    """The outcome of one workload.

    `output` is the whole log of the pod that ran the tool (the MPI launcher for an
    MPI job); `placement` maps each pod of the workload to its node; `reason` is one
    line (the scheduler's message, ``OOMKilled``, ...), empty on success.
    """

    workload: str
    kind: WorkloadKind
    output: str
    exit_code: int | None
    status: RunStatus
    reason: str
    started: datetime | None
    finished: datetime | None
    placement: Mapping[str, str]
    events: tuple[Mapping[str, str], ...]
    manifests: tuple[Mapping[str, object], ...]
    log_tail: str

    @property
    def ok(self) -> bool:
        return self.status == "succeeded" and self.exit_code == 0

    def to_json(self) -> dict[str, Any]:
        """Plain data, so that every pytest process of a run can read a result one of them awaited."""
        return {
            "workload": self.workload,
            "kind": self.kind,
            "output": self.output,
            "exit_code": self.exit_code,
            "status": self.status,
            "reason": self.reason,
            "started": self.started.isoformat() if self.started else None,
            "finished": self.finished.isoformat() if self.finished else None,
            "placement": dict(self.placement),
            "events": [dict(e) for e in self.events],
            "manifests": [dict(m) for m in self.manifests],
            "log_tail": self.log_tail,
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> RunResult:
        def when(value: str | None) -> datetime | None:
            return datetime.fromisoformat(value) if value else None

        return cls(
            workload=doc["workload"],
            kind=doc["kind"],
            output=doc["output"],
            exit_code=doc["exit_code"],
            status=doc["status"],
            reason=doc["reason"],
            started=when(doc["started"]),
            finished=when(doc["finished"]),
            placement=dict(doc["placement"]),
            events=tuple(doc["events"]),
            manifests=tuple(doc["manifests"]),
            log_tail=doc["log_tail"],
        )

    def rank_placement(self, rank_hosts: Mapping[int, str]) -> dict[int, RankPlacement]:
        """rank → host (from the tool's rank lines) → pod → node (from the cluster).

        A host is matched to a pod by its name or its first DNS label
        (``J-worker-0.J.ns.svc``), or to a node by name (host networking).
        """
        node_pods: dict[str, str] = {}
        for pod, node in sorted(self.placement.items()):
            node_pods.setdefault(node, pod)
        out: dict[int, RankPlacement] = {}
        for rank, host in sorted(rank_hosts.items()):
            short = host.split(".", 1)[0]
            found = next((c for c in (host, short) if c in self.placement), None)
            if found is not None:
                out[rank] = RankPlacement(rank, host, found, self.placement[found])
            elif short in node_pods or host in node_pods:
                node = host if host in node_pods else short
                out[rank] = RankPlacement(rank, host, node_pods[node], node)
            else:
                out[rank] = RankPlacement(rank, host, None, None)
        return out


@dataclass(frozen=True)
class NodeInfo:
    """A node as the cluster reports it, with GPU feature discovery labels."""

    name: str
    ready: bool
    unschedulable: bool
    conditions: Mapping[str, str]
    allocatable_gpus: int
    labels: Mapping[str, str]
    kubelet_version: str
    os_image: str
    kernel_version: str = ""

    @property
    def gpu_product(self) -> str | None:
        return self.labels.get("nvidia.com/gpu.product")

    @property
    def driver_version(self) -> str | None:
        return self.labels.get("nvidia.com/cuda.driver-version.full") or self.labels.get("nvidia.com/cuda.driver.major")

    @property
    def cuda_version(self) -> str | None:
        return self.labels.get("nvidia.com/cuda.runtime-version.full") or self.labels.get(
            "nvidia.com/cuda.runtime.major"
        )


@dataclass(frozen=True)
class ClusterInventory:
    server_version: str
    nodes: tuple[NodeInfo, ...]

    def node(self, name: str) -> NodeInfo | None:
        for node in self.nodes:
            if node.name == name:
                return node
        return None


class Cluster(Protocol):
    """Where workloads run. Used as a context manager: leaving it cleans up."""

    def inventory(self) -> ClusterInventory: ...

    def submit(self, workloads: Sequence[Workload]) -> list[Handle]: ...

    def wait(self, handles: Sequence[Handle], deadline_s: float) -> list[RunResult]:
        """Wait for all `handles` together; one result per handle, in order."""
        ...

    def events(self, nodes: Sequence[str], since: datetime) -> list[ClusterEvent]: ...

    def leftovers(self) -> list[str]:
        """Objects that earlier runs of this harness left behind (``kind/name``)."""
        ...

    def cleanup(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...
