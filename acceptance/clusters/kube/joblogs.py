"""A customer's job on Kubernetes, read-only: its pods (by label selector), their logs, placement and events.

Used by ``acceptance bundle --job SELECTOR``: the harness did not start these pods and never
changes them. A log that cannot be read (pod never started, already gone, or the API kept failing) is None,
not an error: the bundle is assembled from what could be read, and the pod's other facts still go in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from acceptance.clusters.base import ClusterEvent, JobContainer, JobLogs, JobPod
from acceptance.clusters.kube.client import KubeApi
from acceptance.clusters.kube.status import parse_time
from acceptance.errors import KubeApiError


def _container(spec: Mapping[str, Any], status: Mapping[str, Any] | None) -> JobContainer:
    state_doc: Mapping[str, Any] = (status or {}).get("state") or {}
    state = next(iter(state_doc), None)
    detail: Mapping[str, Any] = state_doc.get(state, {}) if state else {}
    env = {str(e.get("name")): str(e.get("value", "")) for e in spec.get("env") or () if "value" in e}
    code = detail.get("exitCode")
    return JobContainer(
        name=str(spec.get("name", "")),
        image=str(spec.get("image", "")),
        image_id=(status or {}).get("imageID") or None,
        command=tuple(str(a) for a in [*(spec.get("command") or ()), *(spec.get("args") or ())]),
        env=env,
        state=state,
        reason=detail.get("reason"),
        exit_code=int(code) if isinstance(code, int) else None,
    )


def _pod(api: KubeApi, doc: Mapping[str, Any], tail_lines: int | None) -> JobPod:
    meta, spec, status = doc["metadata"], doc.get("spec") or {}, doc.get("status") or {}
    statuses = {s.get("name"): s for s in status.get("containerStatuses") or ()}
    containers = tuple(_container(c, statuses.get(c.get("name"))) for c in spec.get("containers") or ())
    name, namespace = str(meta["name"]), str(meta.get("namespace", ""))
    return JobPod(
        name=name,
        namespace=namespace,
        node=spec.get("nodeName") or None,
        hostname=spec.get("hostname") or None,
        phase=str(status.get("phase", "Unknown")),
        labels=dict(meta.get("labels") or {}),
        containers=containers,
        created=parse_time(meta.get("creationTimestamp")),
        log=_log(api, namespace, name, tail_lines),
    )


def _log(api: KubeApi, namespace: str, name: str, tail_lines: int | None) -> str | None:
    try:
        return api.log(namespace, name, tail_lines=tail_lines)
    except KubeApiError:
        return None


def read_job(api: KubeApi, namespace: str, selector: str, tail_lines: int | None = None) -> JobLogs:
    """The job's pods in `namespace` matching `selector`, oldest first, with their events."""
    doc = api.call(f"list pods {selector!r}", api.core.list_namespaced_pod, namespace, label_selector=selector)
    items = sorted(doc.get("items") or (), key=lambda p: (p["metadata"].get("creationTimestamp", ""),
                                                           p["metadata"]["name"]))  # fmt: skip
    pods = tuple(_pod(api, item, tail_lines) for item in items)
    names = {p.name for p in pods}
    events: list[ClusterEvent] = []
    if names:
        found = api.call("list pod events", api.core.list_namespaced_event, namespace,
                         field_selector="involvedObject.kind=Pod")  # fmt: skip
        for ev in found.get("items") or ():
            involved = ev.get("involvedObject") or {}
            if involved.get("name") in names:
                when = parse_time(ev.get("lastTimestamp") or ev.get("firstTimestamp") or ev.get("eventTime"))
                events.append(ClusterEvent(when, f"Pod/{involved.get('name')}", str(ev.get("reason", "")),
                                           str(ev.get("message", "")), str(ev.get("type", "Normal"))))  # fmt: skip
    events.sort(key=lambda e: (e.time is None, e.time.isoformat() if e.time else ""))
    return JobLogs(selector, namespace, pods, tuple(events))
