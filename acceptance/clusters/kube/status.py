"""What Kubernetes object states mean for a workload (pure: dicts in, verdict pieces out)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, NamedTuple

from acceptance.clusters.base import RunStatus

Obj = Mapping[str, Any]


class Outcome(NamedTuple):
    """How an awaited workload ended: its status, why in words, and the main container's exit code.

    A named tuple rather than a dataclass: as immutable, and equal to the plain triple older callers compare with.
    """

    status: RunStatus
    reason: str = ""
    exit_code: int | None = None


BAD_WAITING = frozenset({"ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
                         "CreateContainerConfigError", "CreateContainerError", "CrashLoopBackOff"})  # fmt: skip


ASSIGNED = re.compile(r"^Successfully assigned [^/\s]+/(\S+) to (\S+)")


def owner_of(tops: Mapping[str, str], name: str) -> str | None:
    """The workload whose top object `name` belongs to: itself, or a prefix (``J-worker-3``, ``J-abcde``)."""
    while True:
        if name in tops:
            return tops[name]
        if "-" not in name:
            return None
        name = name.rsplit("-", 1)[0]


def parse_time(stamp: str | None) -> datetime | None:
    if not stamp:
        return None
    try:
        return datetime.strptime(stamp.replace(".000000", ""), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None


def conditions(obj: Obj) -> dict[str, Obj]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or ()}


def true_condition(obj: Obj, kind: str) -> Obj | None:
    cond = conditions(obj).get(kind)
    return cond if cond and cond.get("status") == "True" else None


def container_state(pod: Obj, state: str) -> Obj | None:
    for cs in (pod.get("status") or {}).get("containerStatuses") or ():
        found = (cs.get("state") or {}).get(state)
        if found:
            return {**found, "container": cs.get("name", "")}
    return None


def where(pod: Obj) -> str:
    node = (pod.get("spec") or {}).get("nodeName")
    return f"pod {pod['metadata']['name']}" + (f" on node {node}" if node else "")


def pod_failure(pod: Obj, not_ready: Mapping[str, str], code: int | None) -> Outcome | None:
    """A pod state that dooms its workload (Evicted, image pull back-off, OOMKilled, node NotReady), if any."""
    status = pod.get("status") or {}
    if status.get("reason") == "Evicted":
        return Outcome("failed", f"Evicted: {where(pod)}: {status.get('message', '')}".rstrip(": "), code)
    waiting = container_state(pod, "waiting")
    if waiting and waiting.get("reason") in BAD_WAITING:
        return Outcome("failed", f"{waiting['reason']}: {where(pod)}: {waiting.get('message', '')}", None)
    term = container_state(pod, "terminated")
    if term and term.get("reason") == "OOMKilled":
        return Outcome("failed", f"OOMKilled: container {term['container']} of {where(pod)} exceeded its "
                f"memory limit (exit {term.get('exitCode')})", code)  # fmt: skip
    node = (pod.get("spec") or {}).get("nodeName")
    if node and node in not_ready and status.get("phase") in ("Pending", "Running"):
        return Outcome("failed", f"node {node} NotReady ({not_ready[node]}) under {where(pod)}", None)
    return None


def unschedulable_message(pod: Obj) -> str | None:
    """The scheduler's message while the pod is Pending as Unschedulable."""
    cond = conditions(pod).get("PodScheduled", {})
    if cond.get("status") == "False" and cond.get("reason") == "Unschedulable":
        return str(cond.get("message", "Unschedulable"))
    return None


def image_of(pod: Obj, peers: Iterable[Obj] = ()) -> str:
    """The main container's image: the kubelet's imageID (with the digest) when it reports one.

    A container that never started has no imageID; its `peers` (the workload's other pods) running the same image
    name it then, so that a tag is recorded only when no pod of the workload has reported the digest.
    """
    containers = (pod.get("spec") or {}).get("containers") or ()
    spec_image = str(containers[0].get("image", "")) if containers else ""
    for candidate in (pod, *peers):
        for status in (candidate.get("status") or {}).get("containerStatuses") or ():
            found = str(status.get("imageID") or "")
            if "@sha256:" in found and (candidate is pod or status.get("image") == spec_image):
                return found.split("://", 1)[-1]  # docker-pullable://repo@sha256:... → repo@sha256:...
    return spec_image
