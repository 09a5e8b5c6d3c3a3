"""The Kubernetes backend: Kubeflow MPI operator MPIJobs and batch/v1 Jobs.

`KubeCluster` submits the manifests of `kube_manifests`, waits with `kube_wait`,
and deletes everything labelled with its run id when it is left (normally, on
Ctrl-C, on SIGTERM). The operator facts it relies on are in `kube_manifests` and `kube_wait`.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from types import FrameType, TracebackType
from typing import Any, Self

from acceptance.clusters.base import (
    GPUS_NOT_ALLOCATABLE,
    NODE_NOT_READY,
    NODE_PROBLEM,
    NODE_READY_CHANGED,
    ClusterEvent,
    ClusterInventory,
    Handle,
    JobLogs,
    Leftover,
    NodeInfo,
    ProgressSink,
    Workload,
    WorkloadResult,
)
from acceptance.clusters.kube.cleanup import delete_labelled, delete_run, list_labelled, live_runs, older_than
from acceptance.clusters.kube.client import KubeApi, build_api_client
from acceptance.clusters.kube.follow import follow_log
from acceptance.clusters.kube.joblogs import read_job
from acceptance.clusters.kube.lease import Lease
from acceptance.clusters.kube.manifests import MPI_API_VERSION, label_value, manifest_for, run_selector
from acceptance.clusters.kube.settings import KubeSettings
from acceptance.clusters.kube.status import parse_time
from acceptance.clusters.kube.wait import Waiter
from acceptance.errors import ClusterError, KubeApiError, UsageError
from acceptance.profile import Profile

__all__ = ["KubeCluster", "KubeSettings"]


def _node_info(node: dict[str, Any], gpu_resource: str) -> NodeInfo:
    meta, spec, status = node["metadata"], node.get("spec") or {}, node.get("status") or {}
    conditions = {c["type"]: c.get("status", "Unknown") for c in status.get("conditions") or ()}
    info = status.get("nodeInfo") or {}
    try:
        gpus = int((status.get("allocatable") or {}).get(gpu_resource, 0))
    except (TypeError, ValueError):
        gpus = 0
    return NodeInfo(
        name=meta["name"],
        ready=conditions.get("Ready") == "True",
        unschedulable=bool(spec.get("unschedulable")),
        conditions=conditions,
        allocatable_gpus=gpus,
        labels=dict(meta.get("labels") or {}),
        kubelet_version=info.get("kubeletVersion", ""),
        os_image=info.get("osImage", ""),
        kernel_version=info.get("kernelVersion", ""),
    )


_KUBELET_CONDITIONS = frozenset({"Ready"})


def _state_signals(
    node: dict[str, Any], wanted: set[str], since: datetime, now: datetime, gpu_resource: str
) -> list[ClusterEvent]:
    """`Cluster.node_signals`' derived events of one node object."""
    name = (node.get("metadata") or {}).get("name")
    if name not in wanted:
        return []
    status = node.get("status") or {}
    obj = f"Node/{name}"
    out = []
    for cond in status.get("conditions") or ():
        kind, value = cond.get("type", ""), cond.get("status", "Unknown")
        when = parse_time(cond.get("lastTransitionTime"))
        said = " ".join(x for x in (cond.get("reason"), cond.get("message")) if x)
        if kind == "Ready" and value != "True":
            out.append(ClusterEvent(when or now, obj, NODE_NOT_READY, f"Ready={value} {said}".strip(), "Warning"))
        elif kind == "Ready" and when is not None and when > since:
            out.append(ClusterEvent(when, obj, NODE_READY_CHANGED, f"Ready again since {when.isoformat()}; it was "
                                    "not Ready before", "Warning"))  # fmt: skip
        elif kind not in _KUBELET_CONDITIONS and value == "True":
            out.append(ClusterEvent(when or now, obj, NODE_PROBLEM, f"{kind}=True {said}".strip(), "Warning"))
    try:
        capacity = int((status.get("capacity") or {}).get(gpu_resource, 0))
        allocatable = int((status.get("allocatable") or {}).get(gpu_resource, 0))
    except (TypeError, ValueError):
        capacity = allocatable = 0
    if allocatable < capacity:
        out.append(ClusterEvent(now, obj, GPUS_NOT_ALLOCATABLE, f"{allocatable} of {capacity} {gpu_resource} "
                                "allocatable", "Warning"))  # fmt: skip
    return out


class KubeCluster:
    """A Kubernetes cluster reached with the profile's kubeconfig context (or in-cluster)."""

    def __init__(self, settings: KubeSettings, run_id: str, api_client: Any | None = None) -> None:
        self.settings = settings
        self.run_id = run_id
        self.api = KubeApi(api_client if api_client is not None else build_api_client(settings), settings.api_retry)
        self._mpi_checked = False
        self._previous: dict[int, Any] = {}
        self._cleaned = False
        self.lease = Lease(self.api, settings.namespace, label_value(run_id), settings.lease_s)
        self.in_cluster = settings.kubeconfig is None and bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
        self._stops: dict[str, str] = {}  # workload object name -> why the harness stops it (`stop`)

    @classmethod
    def from_profile(cls, profile: Profile, run_id: str) -> KubeCluster:
        """The cluster of the profile's ``kube:`` section (kubeconfig context, or in-cluster)."""
        return cls(KubeSettings.from_mapping(profile.kube, source=str(profile.path)), run_id)

    # ------------------------------------------------------------ context

    def __enter__(self) -> Self:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._on_signal)
        return self

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            self.cleanup()
        except ClusterError as error:
            if exc is None:
                raise
            # already leaving on an error or Ctrl-C: say what is left, keep the original exception
            print(f"recovery-acceptance: cleanup incomplete: {error}", file=sys.stderr)
        finally:
            for sig, handler in self._previous.items():
                signal.signal(sig, handler)
            self._previous.clear()

    # ------------------------------------------------------------ Cluster protocol

    def describe(self) -> list[str]:
        where = self.settings.kubeconfig or ("in-cluster" if self.in_cluster else "~/.kube/config")
        return [f"Kubernetes: {where}, context {self.settings.context or 'current'}, "
                f"namespace {self.settings.namespace}"]  # fmt: skip

    def attach_info(self) -> dict[str, str]:
        return {}

    def workload_env(self) -> Mapping[str, str]:
        """The profile's plain values (a secret reference is the cluster's to resolve, not ours)."""
        return {k: v for k, v in self.settings.env.items() if isinstance(v, str)}

    def close(self) -> None:
        self.lease.release()
        self.api.close()

    def inventory(self) -> ClusterInventory:
        version = self.api.call("get server version", self.api.version.get_code)
        nodes = self.api.call("list nodes", self.api.core.list_node)
        infos = tuple(
            sorted((_node_info(n, self.settings.gpu_resource) for n in nodes.get("items") or ()), key=lambda n: n.name)
        )
        return ClusterInventory(server_version=str(version.get("gitVersion", "")), nodes=infos)

    def _check_mpi_operator(self) -> None:
        if self._mpi_checked:
            return
        group, version = MPI_API_VERSION.split("/")
        try:
            doc = self.api.call(f"discover {MPI_API_VERSION}", self.api.custom.get_api_resources, group, version)
        except KubeApiError as exc:
            raise ClusterError(
                f"the cluster does not serve {MPI_API_VERSION} MPIJobs ({exc}); install the Kubeflow MPI operator "
                "v0.5+ (a training-operator v1 MPIJob CRD cannot be used)"
            ) from None
        if not any(r.get("name") == "mpijobs" for r in doc.get("resources") or ()):
            raise ClusterError(f"the cluster's {MPI_API_VERSION} API has no mpijobs resource")
        self._mpi_checked = True

    def submit(self, workloads: Sequence[Workload]) -> list[Handle]:
        names = [w.name for w in workloads]
        if len(set(names)) != len(names):
            raise UsageError(f"workload names must be unique within a submission: {names}")
        manifests = [manifest_for(self.settings, self.run_id, w) for w in workloads]
        if any(m["kind"] == "MPIJob" for m in manifests):
            self._check_mpi_operator()
        self.lease.hold()
        handles = []
        for workload, manifest in zip(workloads, manifests, strict=True):
            self._create(manifest)
            handles.append(Handle(workload=workload, objects=((manifest["kind"], manifest["metadata"]["name"]),),
                                  manifests=(manifest,), submitted=datetime.now(UTC)))  # fmt: skip
        return handles

    def _create(self, manifest: dict[str, Any]) -> None:
        ns, name, kind = self.settings.namespace, manifest["metadata"]["name"], manifest["kind"]
        if kind == "Job":

            def existing_job() -> Any:
                return self.api.call(f"get Job {name}", self.api.batch.read_namespaced_job, name, ns)

            self.api.call(f"create Job {name}", self.api.batch.create_namespaced_job, ns, manifest, sent=manifest,
                          on_conflict=existing_job)  # fmt: skip
            return
        group, version = MPI_API_VERSION.split("/")

        def existing_mpijob() -> Any:
            return self.api.call(f"get MPIJob {name}", self.api.custom.get_namespaced_custom_object,
                                 group, version, ns, "mpijobs", name)  # fmt: skip

        self.api.call(f"create MPIJob {name}", self.api.custom.create_namespaced_custom_object, group, version, ns,
                      "mpijobs", manifest, sent=manifest, on_conflict=existing_mpijob)  # fmt: skip

    def wait(
        self, handles: Sequence[Handle], deadline_s: float, *, progress: ProgressSink | None = None
    ) -> list[WorkloadResult]:
        return Waiter(self.api, self.settings, self.run_id, self._stops).wait(handles, deadline_s, progress)

    # ------------------------------------------------------------ StreamsLogs

    def follow(self, handle: Handle, deadline_s: float) -> Iterator[str]:
        """The workload's launcher (MPIJob) or pod (Job) log as it grows, in complete lines."""
        name = handle.objects[0][1]
        return follow_log(self.api, self.settings.namespace, self.run_id, handle, deadline_s,
                          lambda: name in self._stops)  # fmt: skip

    def stop(self, handle: Handle, reason: str) -> None:
        """Stop the workload as a finished one is: the `wait` awaiting it reads its log, then deletes it."""
        self._stops.setdefault(handle.objects[0][1], reason)

    def run(self, workloads: Sequence[Workload], deadline_s: float) -> list[WorkloadResult]:
        """Submit and wait in one go."""
        return self.wait(self.submit(workloads), deadline_s)

    def events(self, nodes: Sequence[str], since: datetime) -> list[ClusterEvent]:
        """Events about `nodes` (any namespace) since `since`, oldest first."""
        wanted = set(nodes)
        try:
            doc = self.api.call("list events", self.api.core.list_event_for_all_namespaces,
                                field_selector="involvedObject.kind=Node")  # fmt: skip
        except KubeApiError as exc:
            if exc.status != 403:
                raise
            # node events live in "default"; a namespaced account may still read those
            doc = self.api.call("list node events", self.api.core.list_namespaced_event, "default",
                                field_selector="involvedObject.kind=Node")  # fmt: skip
        out = []
        for ev in doc.get("items") or ():
            involved = ev.get("involvedObject") or {}
            when = parse_time(ev.get("lastTimestamp") or ev.get("firstTimestamp"))
            if involved.get("name") in wanted and (when is None or when >= since):
                out.append(ClusterEvent(when, f"Node/{involved.get('name')}", ev.get("reason", ""),
                                        ev.get("message", ""), ev.get("type", "Normal")))  # fmt: skip
        return sorted(out, key=lambda e: e.time or since)

    def job_logs(self, selector: str, namespace: str | None = None) -> JobLogs:
        """The customer's job (pods matching `selector`), read-only: logs, placement, images, events."""
        return read_job(self.api, namespace or self.settings.namespace, selector)

    def node_signals(self, nodes: Sequence[str], since: datetime) -> list[ClusterEvent]:
        """Node events since `since` plus what the nodes' conditions and allocatable GPUs say now.

        Kubernetes keeps no history of a node's state: a condition carries only its last transition,
        and the API server drops events after its event TTL (one hour by default), so an hourly
        schedule of criterion 5 sees every NodeNotReady event; conditions cover the rest.
        """
        wanted = set(nodes)
        doc = self.api.call("list nodes", self.api.core.list_node)
        now = datetime.now(UTC)
        out = [e for e in self.events(nodes, since) if e.type == "Warning" or e.reason in (NODE_NOT_READY,)]
        for node in doc.get("items") or ():
            out.extend(_state_signals(node, wanted, since, now, self.settings.gpu_resource))
        out.append(ClusterEvent(now, "cluster", "Coverage", "Kubernetes events are kept for the API server's event TTL "
                                "(1 h by default); node conditions keep their last transition only"))  # fmt: skip
        return sorted(out, key=lambda e: e.time or since)

    def leftovers(self) -> list[Leftover]:
        """Labelled objects of other runs of this harness in the namespace, live or ended."""
        mine = label_value(self.run_id)
        items = [i for i in list_labelled(self.api, self.settings.namespace) if i.run_id != mine]
        live = live_runs(items)
        return [Leftover(f"{i.kind}/{i.name}", i.run_id, live.get(i.run_id)) for i in items]

    def remove_leftovers(
        self, older_than_s: float | None, dry_run: bool = False, include_live: bool = False
    ) -> list[Leftover]:
        """Delete ended runs' labelled objects (older than `older_than_s`; live runs' too if asked); what was found."""
        items = [i for i in list_labelled(self.api, self.settings.namespace) if i.run_id != label_value(self.run_id)]
        live = live_runs(items)
        found = [i for i in older_than(items, older_than_s) if include_live or i.run_id not in live]
        if not dry_run:
            delete_labelled(self.api, self.settings.namespace, found)
        return [Leftover(f"{i.kind}/{i.name}", i.run_id, live.get(i.run_id)) for i in found]

    def cleanup(self) -> None:
        """Delete everything of this run, retrying the API for `cleanup_timeout_s`; raise naming what remains."""
        if self._cleaned:
            return
        self.lease.release()
        timeout = self.settings.cleanup_timeout_s
        done = delete_run(self.api, self.settings.namespace, run_selector(self.run_id), timeout)
        self._cleaned = done.complete
        if not done.complete:
            raise ClusterError(f"objects of run {self.run_id} may remain after {timeout:.0f} s of cleanup: "
                               f"{done.describe()}; they are leftovers once the run's lease ends (within "
                               f"{self.settings.lease_s:.0f} s)")  # fmt: skip
