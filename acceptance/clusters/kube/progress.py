"""Where an awaited workload is, from its pods (pure: the objects the watches saw in, a `WorkloadProgress` out).

A pod is *pending* until it is bound to a node (the scheduler's message when it cannot be), *pulling
image* while the kubelet creates its container (``ContainerCreating``: the image pull, for a cold
cache the longest part), *running* once the pod that runs the tool (the Job's pod, the MPIJob's
launcher) runs; an MPIJob whose workers run but whose launcher does not yet is *starting*.
"""

from __future__ import annotations

from collections.abc import Mapping

from acceptance.clusters.base import Handle, Phase, RunStatus, WorkloadProgress
from acceptance.clusters.kube.status import Obj, Outcome, container_state, unschedulable_message

CREATING = frozenset({"ContainerCreating", "PodInitializing", "ErrImagePull"})


def pod_phase(pod: Obj) -> Phase:
    """One pod's phase as the progress line names it."""
    status = pod.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed"):
        return "done"
    if status.get("phase") == "Running":
        return "running"
    waiting = container_state(pod, "waiting")
    if (pod.get("spec") or {}).get("nodeName") and waiting and waiting.get("reason") in CREATING:
        return "pulling image"
    return "pending"


def workload_progress(
    handle: Handle,
    pods: Mapping[str, Obj],
    main: Obj | None,
    outcome: Outcome | None,
    elapsed_s: float,
    deadline_s: float,
) -> WorkloadProgress:
    """The workload of `handle`, from its `pods` (`main`: the pod that runs the tool) and its outcome so far."""

    def progress(phase: Phase, note: str = "", status: RunStatus | None = None) -> WorkloadProgress:
        # every workload is pinned: where it was asked to run is where it runs
        return WorkloadProgress.of(handle.workload, phase, elapsed_s, deadline_s, note, status)

    if outcome is not None:
        status, reason, _code = outcome
        return progress("done", reason, status)
    phases = {name: pod_phase(pod) for name, pod in pods.items()}
    if main is not None and phases.get(main["metadata"]["name"]) == "running":
        return progress("running")
    if "pulling image" in phases.values():
        return progress("pulling image")
    if "running" in phases.values():
        return progress("starting")
    unschedulable = next((m for p in pods.values() if (m := unschedulable_message(p))), None)
    return progress("pending", f"unschedulable: {unschedulable}" if unschedulable else "")
