"""What the suite asks of a cluster backend, and what it gets back.

Workload specs say *what* to run (node set, GPUs, command, deadline); a backend turns
them into its own objects (Kubernetes manifests, SSH commands). A `WorkloadResult` is a
frozen value: a failed or unschedulable workload is a result with a reason, never an
exception, so a verdict can be built from it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from acceptance.metrics.base import MetricsSource

SIMULATED_LABEL = "acceptance.sim/simulated"  # on the nodes of the simulator's Kubernetes API emulator
WorkloadKind = Literal["nccl", "dcgm", "smoke", "node"]
# An environment value: plain text, or a reference to where the cluster keeps it
# (``{"valueFrom": {"secretKeyRef": {"name": ..., "key": ...}}}``): credentials never enter a manifest.
EnvValue = str | Mapping[str, Any]
RunStatus = Literal["succeeded", "failed", "timeout", "unschedulable", "error"]
# Where a workload is while it is awaited: not placed yet, its image being pulled, some of its pods up
# but not the tool (MPI workers waiting for their launcher), the tool running, or ended (`status` says how).
Phase = Literal["pending", "pulling image", "starting", "running", "done"]


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
    env: Mapping[str, EnvValue] = field(default_factory=dict)
    deadline_s: float = 3600.0


@dataclass(frozen=True)
class NodeWorkload:
    """A command on one node (a site's own check): `image` names one of the profile's images.

    It holds `gpus` GPUs of the node (0: none) and, when `rdma`, the node's RDMA devices.
    """

    name: str
    node: str
    argv: tuple[str, ...]
    image: str
    gpus: int = 0
    rdma: bool = True
    deadline_s: float = 600.0


Workload = NcclWorkload | DcgmWorkload | SmokeWorkload | NodeWorkload


_KINDS: dict[WorkloadKind, type[Workload]] = {
    "nccl": NcclWorkload,
    "dcgm": DcgmWorkload,
    "smoke": SmokeWorkload,
    "node": NodeWorkload,
}


def workload_kind(workload: Workload) -> WorkloadKind:
    if isinstance(workload, NcclWorkload):
        return "nccl"
    if isinstance(workload, DcgmWorkload):
        return "dcgm"
    if isinstance(workload, NodeWorkload):
        return "node"
    return "smoke"


def workload_to_json(workload: Workload) -> dict[str, Any]:
    doc: dict[str, Any] = {"kind": workload_kind(workload)}
    for f in fields(workload):
        value = getattr(workload, f.name)
        doc[f.name] = dict(value) if isinstance(value, Mapping) else list(value) if isinstance(value, tuple) else value
    return doc


def workload_from_json(doc: Mapping[str, Any]) -> Workload:
    cls = _KINDS[doc["kind"]]
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in doc.items() if k != "kind"}
    return cls(**values)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Handle:
    """A submitted workload: its spec and the backend's objects (kind, name).

    Plain data both ways (`to_json`, `from_json`), so a pytest process that adopts a
    submission another process made finds the same objects without rebuilding them.
    """

    workload: Workload
    objects: tuple[tuple[str, str], ...]
    manifests: tuple[Mapping[str, object], ...]
    submitted: datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "workload": workload_to_json(self.workload),
            "objects": [list(o) for o in self.objects],
            "manifests": [dict(m) for m in self.manifests],
            "submitted": self.submitted.isoformat(),
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Handle:
        return cls(
            workload=workload_from_json(doc["workload"]),
            objects=tuple((str(k), str(n)) for k, n in doc["objects"]),
            manifests=tuple(dict(m) for m in doc["manifests"]),
            submitted=datetime.fromisoformat(doc["submitted"]),
        )


@dataclass(frozen=True)
class WorkloadProgress:
    """Where one awaited workload is now, as a backend sees it (`Cluster.wait`'s `progress` receives these).

    `nodes`: where it runs (for a pending workload: where it was asked to run); `elapsed_s` since it was
    submitted, against `deadline_s`; `note`: one line worth showing (the scheduler's message while it is
    unschedulable); `status` once `phase` is ``done``.
    """

    name: str
    kind: WorkloadKind
    nodes: tuple[str, ...]
    phase: Phase
    elapsed_s: float
    deadline_s: float
    note: str = ""
    status: RunStatus | None = None

    @classmethod
    def of(
        cls,
        workload: Workload,
        phase: Phase,
        elapsed_s: float,
        deadline_s: float,
        note: str = "",
        status: RunStatus | None = None,
    ) -> WorkloadProgress:
        """`workload`'s progress: its name, kind and the nodes it was asked to run on, in `phase`."""
        return cls(workload.name, workload_kind(workload), workload_nodes(workload), phase, elapsed_s, deadline_s,
                   note, status)  # fmt: skip


# Called by a backend while it waits, from the waiting thread, every second or so and once at the end.
ProgressSink = Callable[[Sequence[WorkloadProgress]], None]


def workload_nodes(workload: Workload) -> tuple[str, ...]:
    """The nodes a workload was asked to run on."""
    if isinstance(workload, DcgmWorkload | NodeWorkload):
        return (workload.node,)
    return tuple(workload.nodes)


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


# Reasons of the `ClusterEvent`s that `Cluster.node_signals` derives from a node's state (besides
# the backend's own events, which keep their reason): each means the node was not healthy.
NODE_NOT_READY = "NodeNotReady"  # not Ready now (or an event saying it went NotReady)
NODE_READY_CHANGED = "NodeReadyChanged"  # Ready now, but Ready changed since `since`: it was not Ready before
GPUS_NOT_ALLOCATABLE = "GpuAllocatableDropped"  # fewer GPUs allocatable than the node has
NODE_PROBLEM = "NodeProblem"  # a problem condition (node-problem-detector's) is True; the message names it


@dataclass(frozen=True)
class RankPlacement:
    rank: int
    host: str
    pod: str | None
    node: str | None


@dataclass(frozen=True)
class WorkloadResult:
    """The outcome of one workload.

    `output` is the whole log of the pod that ran the tool (the MPI launcher for an
    MPI job); `placement` maps each pod of the workload to its node; `reason` is one
    line (the scheduler's message, ``OOMKilled``, ...), empty on success. `streams` are
    further outputs kept as evidence by name (an SSH host's stderr, another node's log).
    `stopped` is why the harness stopped the workload before it ended on its own (the smoke run
    whose verdict was decided, `StreamsLogs.stop`): its status is then ``succeeded`` with no exit
    code, and `output` is what it printed until then. Empty when it ran to its end. `launch` is how the
    cluster started the tool's ranks where the backend chooses it (``srun --mpi=pmi2``, ``mpirun``): a
    condition of the handover like the image; empty where the backend has no such choice.
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
    image: str = ""  # the tool's image as the cluster ran it: with its digest when the cluster reports one
    streams: Mapping[str, str] = field(default_factory=dict)
    stopped: str = ""
    launch: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "succeeded" and (self.exit_code == 0 or (bool(self.stopped) and self.exit_code is None))

    @classmethod
    def not_run(cls, workload: Workload, reason: str, when: datetime) -> WorkloadResult:
        """The result of a workload the cluster could not run at all (the backend's error as the reason)."""
        return cls(workload.name, workload_kind(workload), "", None, "error", reason, when, when, {}, (), (), "")

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
            "image": self.image,
            "streams": dict(self.streams),
            **({"stopped": self.stopped} if self.stopped else {}),
            **({"launch": self.launch} if self.launch else {}),
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> WorkloadResult:
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
            image=str(doc.get("image", "")),
            streams=dict(doc.get("streams") or {}),
            stopped=str(doc.get("stopped") or ""),
            launch=str(doc.get("launch") or ""),
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


#: the name this record had in earlier releases: a site's own checks (`hookspecs`) may still import it
RunResult = WorkloadResult


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
class Leftover:
    """An object or process of another run of this harness (``kind/name``).

    `live_until` is set when that run still holds its lease: it is running now (or crashed
    less than a lease ago); None means its run is gone and the object is a leftover to remove.
    """

    object: str
    run_id: str
    live_until: datetime | None = None

    def __str__(self) -> str:
        state = f"live, lease until {self.live_until:%Y-%m-%dT%H:%M:%SZ}" if self.live_until else "run ended"
        return f"{self.object} (run {self.run_id}, {state})"


@dataclass(frozen=True)
class ClusterInventory:
    server_version: str
    nodes: tuple[NodeInfo, ...]

    @property
    def simulated(self) -> bool:
        """Nodes the simulator serves (its Kubernetes API emulator labels them so, whoever started it)."""
        return any(n.labels.get(SIMULATED_LABEL) == "true" for n in self.nodes)

    def node(self, name: str) -> NodeInfo | None:
        for node in self.nodes:
            if node.name == name:
                return node
        return None


@dataclass(frozen=True)
class JobContainer:
    """One container of a job's pod as the cluster reports it (spec and status)."""

    name: str
    image: str
    image_id: str | None
    command: tuple[str, ...]
    env: Mapping[str, str]
    state: str | None
    reason: str | None
    exit_code: int | None


@dataclass(frozen=True)
class JobPod:
    """A pod of the customer's job: where it ran, what it ran, and its log (None when unreadable)."""

    name: str
    namespace: str
    node: str | None
    hostname: str | None
    phase: str
    labels: Mapping[str, str]
    containers: tuple[JobContainer, ...]
    created: datetime | None
    log: str | None


@dataclass(frozen=True)
class JobLogs:
    """What `Cluster.job_logs` found for a label selector: the pods (their logs, placement) and their events."""

    selector: str
    namespace: str
    pods: tuple[JobPod, ...]
    events: tuple[ClusterEvent, ...] = ()

    @property
    def placement(self) -> dict[str, str]:
        """pod name and hostname → node, for every pod that was placed."""
        out: dict[str, str] = {}
        for pod in self.pods:
            if pod.node:
                out[pod.name] = pod.node
                if pod.hostname:
                    out[pod.hostname] = pod.node
        return out


class Cluster(Protocol):
    """Where workloads run: what the suite asks of a backend (`acceptance.clusters.open` gives one).

    Every object or process a backend starts carries the run id, so `cleanup` (and, for a
    crashed run, `remove_leftovers`) finds and ends it.
    """

    run_id: str

    def describe(self) -> list[str]:
        """How the cluster is reached, in a line or two for the report header."""
        ...

    def attach_info(self) -> dict[str, str]:
        """What another pytest process of this run needs to reach the same cluster (`open(..., attach=)`)."""
        ...

    def workload_env(self) -> Mapping[str, str]:
        """The environment the profile gives every workload (NCCL settings among it)."""
        ...

    def inventory(self) -> ClusterInventory: ...

    def submit(self, workloads: Sequence[Workload]) -> list[Handle]: ...

    def wait(
        self, handles: Sequence[Handle], deadline_s: float, *, progress: ProgressSink | None = None
    ) -> list[WorkloadResult]:
        """Wait for all `handles` together; one result per handle, in order.

        `progress`, when given, is told where each workload is while the wait lasts (a backend that
        cannot tell may ignore it; it must still accept the keyword).
        """
        ...

    def events(self, nodes: Sequence[str], since: datetime) -> list[ClusterEvent]: ...

    def job_logs(self, selector: str, namespace: str | None = None) -> JobLogs:
        """The pods of a job the harness did not start (label `selector`, in `namespace` or the profile's):
        their logs, nodes, images and commands, and the events about them. Read-only."""
        ...

    def node_signals(self, nodes: Sequence[str], since: datetime) -> list[ClusterEvent]:
        """What the cluster knows of `nodes`' health since `since`, oldest first (criterion 5).

        The backend's own warnings about the nodes (events, logs), plus events it derives from the
        nodes' state now, with the reasons above: `NODE_NOT_READY` (time: when it went not Ready),
        `NODE_READY_CHANGED` (Ready, but its last transition is after `since`), `GPUS_NOT_ALLOCATABLE`
        (time: now), `NODE_PROBLEM` (a problem condition True; time: its transition). A backend
        that keeps no history says so in an event of type ``Normal`` and reason ``Coverage``.
        """
        ...

    def leftovers(self) -> list[Leftover]:
        """Objects of other runs of this harness: those of live runs (a lease) and those crashed runs left."""
        ...

    def remove_leftovers(
        self, older_than_s: float | None, dry_run: bool = False, include_live: bool = False
    ) -> list[Leftover]:
        """Delete (or, dry, list) what ended runs left behind; a live run's objects only with `include_live`."""
        ...

    def cleanup(self) -> None:
        """Delete everything of this run; raise ClusterError naming what is still there afterwards."""
        ...

    def close(self) -> None:
        """Release what the backend holds for the run (connections, an emulator it started)."""
        ...


@runtime_checkable
class HostEvidence(Protocol):
    """A backend that reaches the nodes' own operating system (SSH hosts): what an incident bundle reads there.

    Kubernetes nodes have no such seam (their kernel logs come from ``--evidence HOST=PATH``).
    """

    def host_evidence(self, nodes: Sequence[str]) -> tuple[dict[str, dict[str, str]], list[str]]:
        """node → ``{"dmesg": text, "nvidia-smi-q": text}`` (what could be read), and what could not, in words."""
        ...


@runtime_checkable
class StreamsLogs(Protocol):
    """A backend that hands out a workload's log while it runs, and stops a workload on request.

    Optional: a backend without it has its workloads' logs judged whole, once they end. The
    smoke run uses it to stop as soon as its verdict is decided (criterion 3, sequential rule).
    """

    def follow(self, handle: Handle, deadline_s: float) -> Iterator[str]:
        """The text the workload prints (its launcher's stdout), in complete lines, as it arrives; ends
        when the workload ends, when it is stopped, or after `deadline_s` seconds."""
        ...

    def stop(self, handle: Handle, reason: str) -> None:
        """Ask that the workload be stopped the backend's normal way; the `wait` awaiting it then ends
        with a ``succeeded`` result whose `stopped` is `reason`, its output up to the stop kept."""
        ...


@dataclass(frozen=True)
class JobStepState:
    """One step of a scheduler job (``batch``, ``0`` ...): how it stands or ended, and where it ran."""

    step: str
    name: str
    state: str
    exit_code: str = ""
    nodes: tuple[str, ...] = ()
    end: str = ""


@dataclass(frozen=True)
class SchedulerJob:
    """A job the scheduler knows by its id (Slurm), as an incident bundle reads it: where it ran, its state and
    its steps', each of its nodes' state and Reason now, its output files (label, text, host), and what could
    not be read (`notes`). `raw` keeps each command's output as evidence."""

    job_id: str
    name: str
    state: str
    reason: str
    exit_code: str
    nodes: tuple[str, ...]
    batch_host: str | None
    steps: tuple[JobStepState, ...] = ()
    node_states: Mapping[str, str] = field(default_factory=dict)
    bad_nodes: Mapping[str, str] = field(default_factory=dict)  # node → why it is the job's suspect
    logs: tuple[tuple[str, str, str | None], ...] = ()
    notes: tuple[str, ...] = ()
    raw: Mapping[str, str] = field(default_factory=dict)

    def node_events(self) -> dict[str, list[ClusterEvent]]:
        """node → what the scheduler says of it for this job: its state and Reason, the job's and steps' states."""
        out: dict[str, list[ClusterEvent]] = {}
        for node in self.nodes:
            said = [ClusterEvent(None, f"Node/{node}", "SlurmNodeState", self.node_states.get(node, "not listed"))]
            said.append(ClusterEvent(None, f"Node/{node}", "SlurmJob", f"job {self.job_id} ({self.name}) {self.state}"
                                     + (f", Reason={self.reason}" if self.reason not in ("", "None") else "")
                                     + (f", exit {self.exit_code}" if self.exit_code else "")))  # fmt: skip
            for step in self.steps:
                if node in step.nodes:
                    said.append(ClusterEvent(None, f"Node/{node}", "SlurmJobStep",
                                             f"step {step.step} ({step.name}) {step.state}"
                                             + (f", exit {step.exit_code}" if step.exit_code else "")
                                             + (f", ended {step.end}" if step.end else "")))  # fmt: skip
            if node in self.bad_nodes:
                said.append(ClusterEvent(None, f"Node/{node}", "SlurmSuspect", self.bad_nodes[node], "Warning"))
            out[node] = said
        return out

    def to_json(self) -> dict[str, Any]:
        return {"job_id": self.job_id, "name": self.name, "state": self.state, "reason": self.reason,
                "exit_code": self.exit_code, "nodes": list(self.nodes), "batch_host": self.batch_host,
                "steps": [{"step": s.step, "name": s.name, "state": s.state, "exit_code": s.exit_code,
                           "nodes": list(s.nodes), "end": s.end} for s in self.steps],
                "node_states": dict(self.node_states), "bad_nodes": dict(self.bad_nodes),
                "logs": [label for label, _, _ in self.logs], "notes": list(self.notes)}  # fmt: skip


@runtime_checkable
class SchedulerJobs(Protocol):
    """A backend whose scheduler names jobs by id (Slurm): what ``acceptance bundle --job JOBID`` reads.

    Optional: Kubernetes finds a job's pods by label instead (`Cluster.job_logs`).
    """

    def scheduler_job(self, job_id: str) -> SchedulerJob:
        """The job `job_id` (UsageError when the scheduler does not know it); read-only."""


class ProbationPeriod(Protocol):
    """The series of a probation window as a backend serves them (`SimulatesProbation`); `close` releases them."""

    source: MetricsSource
    logs: list[Path]  # the job's rank logs
    notes: list[str]  # what the verdict's evidence says of where the series come from
    job: Mapping[str, str]  # the job's series: ``step_time`` and ``progress`` queries
    now: datetime  # the window's "now" (a simulated window is taken as elapsed)

    def close(self) -> None: ...


@runtime_checkable
class SimulatesProbation(Protocol):
    """A backend over the simulator: criterion 5 reads the probation it simulates for the run (its probation
    faults) unless the profile names where the cluster's real metrics are."""

    def probation_period(self, nodes: Sequence[str], start: datetime, length_s: float) -> ProbationPeriod:
        """The window of `length_s` seconds from `start` for `nodes`, served (a metrics source and logs)."""
        ...
