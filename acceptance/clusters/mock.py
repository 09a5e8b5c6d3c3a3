"""`MockCluster`: the `Cluster` protocol in memory, fed by the simulator's model.

As httpx keeps ``MockTransport`` beside ``BaseTransport``: no HTTP, no threads, no SSH. `submit`
runs each workload's command at once through the simulator's `SimRunner` (what the emulated
kubelet and the ``--cluster=sim-ssh`` shims call) and `wait` hands back the results, so the
criteria, the scheduler, the recording and the report run on it in milliseconds with the same
tool outputs a simulated node prints. Faults are the simulator's own (``nic-degraded@sim-node-07``,
``gpu-xid@sim-node-03:5``...). Simulated time is not waited for: a result's `finished` is its
`started` plus the simulated duration.

It is for tests: another pytest process cannot attach to it (`attach_info` is empty), and it
keeps no objects, so there are never leftovers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

from acceptance.clusters.base import (
    GPUS_NOT_ALLOCATABLE,
    NODE_NOT_READY,
    ClusterEvent,
    ClusterInventory,
    DcgmWorkload,
    Handle,
    JobLogs,
    Leftover,
    NodeInfo,
    NodeWorkload,
    ProgressSink,
    RunStatus,
    Workload,
    WorkloadProgress,
    WorkloadResult,
    workload_kind,
    workload_nodes,
)
from acceptance.errors import ClusterError, ProfileError
from acceptance.profile import Profile, workload_env
from acceptance.sim.kubeapi.controller import image_id
from acceptance.sim.kubeapi.discovery import SERVER_VERSION
from acceptance.sim.model import SimRunner, load_scenario
from acceptance.sim.model.faultspec import SimFaults
from acceptance.sim.runtime import Host, NodeSpec

KIND = "MockWorkload"


class MockCluster:
    """A simulated cluster in this process: each workload runs synchronously through the model."""

    def __init__(
        self,
        runner: SimRunner,
        run_id: str = "ra-mock",
        env: Mapping[str, str] | None = None,
        images: Mapping[str, str] | None = None,
    ) -> None:
        """`env`: what every workload gets (the profile's); `images`: the profile's images by name (``nccl``,
        ``dcgm``, ``smoke``), reported with their digest as the emulated kubelet reports them."""
        self.runner = runner
        self.run_id = run_id
        self.env = dict(env or {})
        self.images = dict(images or {})
        self.submitted: list[Workload] = []  # every workload in the order it was submitted (for tests)
        self._results: dict[str, WorkloadResult] = {}

    @classmethod
    def from_profile(
        cls, profile: Profile, run_id: str = "ra-mock", faults: SimFaults | Sequence[str | Mapping[str, object]] = ()
    ) -> MockCluster:
        """The cluster of a profile's ``sim`` section (scenario and seed), with `faults` injected; the
        production period's faults (criterion 5's) are left to the simulated probation, as for ``--cluster=sim``."""
        if profile.sim is None:
            raise ProfileError(f"{profile.path}: a mock cluster needs the profile's 'sim' section (scenario, seed)")
        texts = [f for f in faults if isinstance(f, str)]
        given = faults if isinstance(faults, SimFaults) else SimFaults.parse(texts)
        with_params = [f for f in faults if isinstance(f, Mapping)]  # a scenario's mappings (tests)
        runner = SimRunner.from_scenario(load_scenario(profile.sim.scenario), [*given.acceptance, *with_params],
                                         seed=profile.sim.seed)  # fmt: skip
        env = {k: v for k, v in workload_env(profile.kube.get("env")).items() if isinstance(v, str)}
        images = {str(k): str(v) for k, v in (profile.kube.get("images") or {}).items()}
        return cls(runner, run_id, env, images)

    # --- what the cluster is --------------------------------------------------------------

    def describe(self) -> list[str]:
        faults = ", ".join(str(f) for f in self.runner.faults.faults) or "none"
        return [f"MOCK cluster in memory (the simulator's model, {len(self.runner.nodes())} nodes); faults: {faults}"]

    def attach_info(self) -> dict[str, str]:
        return {}

    def workload_env(self) -> Mapping[str, str]:
        return dict(self.env)

    def inventory(self) -> ClusterInventory:
        """The model's nodes as the emulator serves them (same labels, versions and Ready condition)."""
        nodes = tuple(sorted((_node_info(spec) for spec in self.runner.nodes()), key=lambda n: n.name))
        return ClusterInventory(server_version=str(SERVER_VERSION["gitVersion"]), nodes=nodes)

    # --- workloads ------------------------------------------------------------------------

    def submit(self, workloads: Sequence[Workload]) -> list[Handle]:
        """Run each workload now, in order; its result waits for `wait`."""
        handles = []
        for workload in workloads:
            now = datetime.now(UTC)
            key = f"{workload.name}-{len(self.submitted)}"
            self.submitted.append(workload)
            self._results[key] = self._run(workload, now)
            handles.append(Handle(workload, ((KIND, key),), (), now))
        return handles

    def wait(
        self, handles: Sequence[Handle], deadline_s: float, *, progress: ProgressSink | None = None
    ) -> list[WorkloadResult]:
        """The results of `handles`, in order (ClusterError for a handle this cluster did not submit)."""
        results = []
        for handle in handles:
            key = next((name for kind, name in handle.objects if kind == KIND), None)
            if key is None or key not in self._results:
                raise ClusterError(f"workload {handle.workload.name} was not submitted to this mock cluster")
            results.append(self._results[key])
        if progress is not None:
            progress(
                [
                    WorkloadProgress.of(h.workload, "done", _seconds(r), h.workload.deadline_s, status=r.status)
                    for h, r in zip(handles, results, strict=True)
                ]
            )
        return results

    def _run(self, workload: Workload, now: datetime) -> WorkloadResult:
        nodes = workload_nodes(workload)
        known = {spec.name: spec for spec in self.runner.nodes()}
        kind = workload_kind(workload)
        placement = {node: node for node in nodes}
        for node in nodes:
            spec = known.get(node)
            if spec is None or not spec.ready:
                why = "is not a node of the cluster" if spec is None else "is NotReady"
                reason = f"node {node} {why}: 0/{len(known)} nodes are available for {workload.name}"
                return WorkloadResult(
                    workload.name, kind, "", None, "unschedulable", reason, None, None, {}, (), (), ""
                )
        env = {**self.env, **{k: v for k, v in getattr(workload, "env", {}).items() if isinstance(v, str)}}
        if isinstance(workload, DcgmWorkload | NodeWorkload):
            run = self.runner.run(list(workload.argv), env, workload.node, [])
        elif len(nodes) == 1 and kind == "smoke":
            run = self.runner.run(list(workload.argv), env, nodes[0], [])
        else:
            slots = workload.gpus_per_node
            argv = ["mpirun", "-np", str(slots * len(nodes)), *workload.argv]
            run = self.runner.run(argv, env, nodes[0], [Host(node, node, slots) for node in nodes])
        status: RunStatus = "succeeded" if run.exit_code == 0 else "failed"
        code: int | None = run.exit_code
        reason = "" if run.exit_code == 0 else f"exit code {run.exit_code}"
        duration = run.duration_s
        if run.duration_s > workload.deadline_s:
            status, code, duration = "timeout", None, workload.deadline_s
            reason = f"still running after its deadline of {workload.deadline_s:g} s"
        tail = "\n".join(run.stdout.splitlines()[-20:])
        finished = now + timedelta(seconds=duration)
        image = self.images.get(workload.image if isinstance(workload, NodeWorkload) else kind)
        return WorkloadResult(workload.name, kind, run.stdout, code, status, reason, now, finished, placement, (), (),
                              tail, image_id(image) if image else "")  # fmt: skip

    # --- health and housekeeping ----------------------------------------------------------

    def events(self, nodes: Sequence[str], since: datetime) -> list[ClusterEvent]:
        return []

    def job_logs(self, selector: str, namespace: str | None = None) -> JobLogs:
        return JobLogs(selector, namespace or "mock", ())

    def node_signals(self, nodes: Sequence[str], since: datetime) -> list[ClusterEvent]:
        """The model's nodes now: NotReady, or fewer GPUs than the node has; it keeps no history and says so."""
        now = datetime.now(UTC)
        specs = {spec.name: spec for spec in self.runner.nodes()}
        out = [ClusterEvent(now, "Cluster/mock", "Coverage", "a mock cluster keeps no history: its nodes now")]
        for node in dict.fromkeys(nodes):
            spec = specs.get(node)
            if spec is None or not spec.ready:
                out.append(ClusterEvent(now, f"Node/{node}", NODE_NOT_READY, "not Ready", "Warning"))
            elif spec.gpus < int(spec.labels.get("nvidia.com/gpu.count", spec.gpus)):
                message = f"{spec.gpus} of {spec.labels['nvidia.com/gpu.count']} GPUs allocatable"
                out.append(ClusterEvent(now, f"Node/{node}", GPUS_NOT_ALLOCATABLE, message, "Warning"))
        return out

    def leftovers(self) -> list[Leftover]:
        return []

    def remove_leftovers(
        self, older_than_s: float | None, dry_run: bool = False, include_live: bool = False
    ) -> list[Leftover]:
        return []

    def cleanup(self) -> None:
        self._results.clear()

    def close(self) -> None:
        self._results.clear()


def _node_info(spec: NodeSpec) -> NodeInfo:
    return NodeInfo(
        name=spec.name,
        ready=spec.ready,
        unschedulable=False,
        conditions={"Ready": "True" if spec.ready else "False"},
        allocatable_gpus=spec.gpus,
        labels=dict(spec.labels),
        kubelet_version=spec.kubelet_version,
        os_image=spec.os_image,
        kernel_version=spec.kernel_version,
    )


def _seconds(result: WorkloadResult) -> float:
    if result.started is None or result.finished is None:
        return 0.0
    return (result.finished - result.started).total_seconds()
