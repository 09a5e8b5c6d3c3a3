"""A running workload's log as it grows: its launcher pod's (an MPIJob) or its pod's (a Job).

The main pod is found by the workload's label and its log followed (``follow=true``); what
arrives is handed out in complete lines. A follow that breaks is opened again and what was
already handed out skipped; once the pod has ended the last of its log is read and handed out.
It ends then, when the workload's pods are gone (stopped or deleted), when the caller says it
is stopped, or at the deadline. A pod that is not up yet is waited for.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from acceptance.clusters.base import Handle
from acceptance.clusters.kube.client import KubeApi
from acceptance.clusters.kube.manifests import label_value, run_selector
from acceptance.clusters.kube.settings import WORKLOAD_KEY
from acceptance.errors import KubeApiError

POLL_S = 0.1
ROLE = "training.kubeflow.org/job-role"
ENDED = ("Succeeded", "Failed")


def _main_pod(pods: list[dict[str, Any]], kind: str) -> dict[str, Any] | None:
    found = [p for p in pods if kind == "Job" or (p["metadata"].get("labels") or {}).get(ROLE) == "launcher"]
    found.sort(key=lambda p: (p["metadata"].get("creationTimestamp", ""), p["metadata"]["name"]))
    return found[-1] if found else None


def follow_log(
    api: KubeApi,
    namespace: str,
    run_id: str,
    handle: Handle,
    deadline_s: float,
    stopped: Callable[[], bool],
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[str]:
    """New complete lines of the workload's main pod log, as they appear (see the module docstring)."""
    kind = handle.objects[0][0]
    selector = f"{run_selector(run_id)},{WORKLOAD_KEY}={label_value(handle.workload.name)}"
    end = clock() + deadline_s
    sent = 0
    seen_pod = False
    while clock() < end and not stopped():
        try:
            doc = api.call("list pods to follow", api.core.list_namespaced_pod, namespace, label_selector=selector)
        except KubeApiError:
            sleep(POLL_S)
            continue
        pod = _main_pod(list(doc.get("items") or ()), kind)
        if pod is None:
            if seen_pod:
                return  # its objects are gone: stopped, ended and deleted, or deleted by someone else
            sleep(POLL_S)
            continue
        seen_pod = True
        name, phase = pod["metadata"]["name"], (pod.get("status") or {}).get("phase")
        if phase in ENDED:
            try:
                text = api.log(namespace, name) or ""
            except KubeApiError:
                text = ""
            if len(text) > sent:
                yield text[sent:]
            return
        if phase != "Running":
            sleep(POLL_S)
            continue
        got = ""  # this follow's text, from the log's start
        try:
            for piece in api.follow(namespace, name, end - clock()):
                got += piece
                complete = got.rfind("\n") + 1
                if complete > sent:
                    yield got[sent:complete]
                    sent = complete
                if stopped():
                    return
        except KubeApiError:
            sleep(POLL_S)  # broken or refused: look at the pod again, then follow again
