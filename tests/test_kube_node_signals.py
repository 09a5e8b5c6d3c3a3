"""`Cluster.node_signals` of the Kubernetes backend, through the official client against the API emulator."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from acceptance.clusters.base import GPUS_NOT_ALLOCATABLE, NODE_NOT_READY, NODE_PROBLEM, NODE_READY_CHANGED
from acceptance.clusters.kube import KubeCluster, KubeSettings
from acceptance.sim.kubeapi import EmulatedApi
from tests.kube_tool_double import CannedRunner

SETTINGS = KubeSettings(namespace="default", images={"nccl": "nccl-tests:2.26", "dcgm": "dcgm:4.2.3"})
SINCE = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=6)


def stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def api() -> Iterator[EmulatedApi]:
    with EmulatedApi(CannedRunner(count=5), time_scale=0.0, namespaces=("default",)) as emulated:
        yield emulated


def set_condition(api: EmulatedApi, node: str, kind: str, status: str, when: datetime, reason: str = "") -> None:
    def mutate(obj: dict[str, Any]) -> None:
        conditions = [c for c in obj["status"]["conditions"] if c["type"] != kind]
        conditions.append({"type": kind, "status": status, "reason": reason, "message": f"{kind} is {status}",
                           "lastHeartbeatTime": stamp(when), "lastTransitionTime": stamp(when)})  # fmt: skip
        obj["status"]["conditions"] = conditions

    api.store.update("nodes", "", node, mutate)


def test_node_state_and_events_become_signals(api: EmulatedApi) -> None:
    for node in ("gpu-0001", "gpu-0002", "gpu-0003", "gpu-0004", "gpu-0005"):
        set_condition(api, node, "Ready", "True", SINCE - timedelta(days=2), "KubeletReady")
    down = SINCE + timedelta(hours=2)
    set_condition(api, "gpu-0002", "Ready", "False", down, "KubeletNotReady")
    back = SINCE + timedelta(hours=3)
    set_condition(api, "gpu-0003", "Ready", "True", back, "KubeletReady")
    problem = SINCE + timedelta(hours=4)
    set_condition(api, "gpu-0004", "KernelDeadlock", "True", problem, "DockerHung")
    api.store.update("nodes", "", "gpu-0005", lambda n: n["status"]["allocatable"].update({"nvidia.com/gpu": "7"}))
    api.controller.event(api.store.require("nodes", "", "gpu-0002"), "Normal", "NodeNotReady",
                         "Node gpu-0002 status is now: NodeNotReady", "node-controller")  # fmt: skip
    with KubeCluster(SETTINGS, "ra-signals", api.api_client()) as kube:
        signals = kube.node_signals(["gpu-0001", "gpu-0002", "gpu-0003", "gpu-0004", "gpu-0005"], SINCE)
    found = {(s.object, s.reason) for s in signals if s.reason != "Coverage"}
    assert found == {
        ("Node/gpu-0002", NODE_NOT_READY),  # the condition, and the node-controller's event
        ("Node/gpu-0003", NODE_READY_CHANGED),
        ("Node/gpu-0004", NODE_PROBLEM),
        ("Node/gpu-0005", GPUS_NOT_ALLOCATABLE),
    }
    by = {(s.object, s.reason, s.message.split(" ")[0]): s for s in signals}
    assert by[("Node/gpu-0002", NODE_NOT_READY, "Ready=False")].time == down
    assert by[("Node/gpu-0003", NODE_READY_CHANGED, "Ready")].time == back
    assert by[("Node/gpu-0004", NODE_PROBLEM, "KernelDeadlock=True")].time == problem
    assert "7 of 8 nvidia.com/gpu allocatable" in by[("Node/gpu-0005", GPUS_NOT_ALLOCATABLE, "7")].message
    assert sum(1 for s in signals if s.reason == NODE_NOT_READY) == 2
    assert any(s.reason == "Coverage" and "event TTL" in s.message for s in signals)


def test_healthy_nodes_give_no_signal(api: EmulatedApi) -> None:
    for node in ("gpu-0001", "gpu-0002"):
        set_condition(api, node, "Ready", "True", SINCE - timedelta(days=1), "KubeletReady")
    with KubeCluster(SETTINGS, "ra-signals", api.api_client()) as kube:
        signals = kube.node_signals(["gpu-0001", "gpu-0002"], SINCE)
    assert [s.reason for s in signals] == ["Coverage"]
