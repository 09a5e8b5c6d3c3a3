"""Reading Kubernetes object states into workload outcomes (pure functions, recorded dicts)."""

from __future__ import annotations

from datetime import UTC, datetime

from acceptance.clusters.kube.status import image_of, owner_of, parse_time, pod_failure, unschedulable_message


def pod(status: dict[str, object], node: str | None = "gpu-01") -> dict[str, object]:
    spec = {"nodeName": node} if node else {}
    return {"metadata": {"name": "p"}, "spec": spec, "status": status}


def test_doomed_pod_states_name_the_pod_node_and_cause() -> None:
    evicted = pod({"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory."})
    assert pod_failure(evicted, {}, 137) == (
        "failed", "Evicted: pod p on node gpu-01: The node was low on resource: memory.", 137)  # fmt: skip
    waiting = {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}
    backoff = pod({"phase": "Pending", "containerStatuses": [{"name": "c", "state": {"waiting": waiting}}]})
    assert pod_failure(backoff, {}, None) == (
        "failed",
        "ImagePullBackOff: pod p on node gpu-01: Back-off pulling image",
        None,
    )
    oom = pod({"phase": "Failed", "containerStatuses": [
        {"name": "c", "state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}]})  # fmt: skip
    assert pod_failure(oom, {}, 137) == (
        "failed",
        "OOMKilled: container c of pod p on node gpu-01 exceeded its memory limit (exit 137)",
        137,
    )
    running = pod({"phase": "Running"})
    assert pod_failure(running, {}, None) is None
    why = "NodeStatusUnknown: Kubelet stopped posting node status."
    assert pod_failure(running, {"gpu-01": why}, None) == (
        "failed", f"node gpu-01 NotReady ({why}) under pod p on node gpu-01", None)  # fmt: skip


def test_transient_pull_error_is_not_yet_a_failure() -> None:
    pulling = pod({"phase": "Pending", "containerStatuses": [
        {"name": "c", "state": {"waiting": {"reason": "ErrImagePull", "message": "timeout"}}}]})  # fmt: skip
    assert pod_failure(pulling, {}, None) is None


def test_unschedulable_message_is_the_schedulers() -> None:
    msg = "0/16 nodes are available: 1 Insufficient nvidia.com/gpu."
    cond = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": msg}
    pending = pod({"phase": "Pending", "conditions": [cond]}, node=None)
    assert unschedulable_message(pending) == msg
    assert unschedulable_message(pod({"phase": "Running"})) is None


def test_events_are_attributed_to_their_workload_by_name_prefix() -> None:
    tops = {"ar-r1": "ar", "ar-r1-x": "other"}
    assert owner_of(tops, "ar-r1-worker-3") == "ar"
    assert owner_of(tops, "ar-r1-launcher-abcde") == "ar"
    assert owner_of(tops, "ar-r1-x-k2f9z") == "other"
    assert owner_of(tops, "unrelated-pod") is None
    assert parse_time("2026-11-30T00:01:02Z") == datetime(2026, 11, 30, 0, 1, 2, tzinfo=UTC)
    assert parse_time("yesterday") is None


def _pod(image: str, image_id: str | None) -> dict[str, object]:
    status = [{"name": "main", "image": image, "imageID": image_id}] if image_id is not None else []
    return {"spec": {"containers": [{"name": "main", "image": image}]}, "status": {"containerStatuses": status}}


def test_the_image_is_the_kubelets_digest_and_a_peer_of_the_same_image_names_it_for_a_pod_not_started() -> None:
    digest = "registry.example/nccl@sha256:" + "ab" * 32
    assert image_of(_pod("registry.example/nccl:2.26", "docker-pullable://" + digest)) == digest
    pending = _pod("registry.example/nccl:2.26", "")
    assert image_of(pending) == "registry.example/nccl:2.26"  # no pod reported the digest: the tag, as asked for
    assert image_of(pending, [_pod("registry.example/nccl:2.26", digest)]) == digest
    other = _pod("registry.example/other:1", "registry.example/other@sha256:" + "cd" * 32)
    assert image_of(pending, [other]) == "registry.example/nccl:2.26"  # another image's digest says nothing
