"""The Kubernetes API emulator as a client sees it: the official client (and kubectl) over HTTP."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from acceptance.clusters.kube.client import iter_watch
from acceptance.sim.kubeapi import EmulatedApi, write_kubeconfig
from acceptance.sim.kubeapi.jobs import owner_ref
from tests.kube_tool_double import CannedRunner

NS = "default"
TOL = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def job(name: str, node: str = "gpu-0001", gpus: str = "8", image: str = "dcgm:4", **extra: Any) -> dict[str, Any]:
    container = {"name": "diag", "image": image, "command": ["dcgmi", "diag", "-r", "1", "-j"],
                 "resources": {"requests": {"nvidia.com/gpu": gpus}, "limits": {"nvidia.com/gpu": gpus}}}  # fmt: skip
    spec = {"restartPolicy": "Never", "nodeSelector": {"kubernetes.io/hostname": node}, "tolerations": TOL,
            "containers": [container]}  # fmt: skip
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "labels": {"t": name}},
            "spec": {"backoffLimit": 0, "template": {"metadata": {"labels": {"t": name}}, "spec": spec},
                     **extra}}  # fmt: skip


def mpijob(name: str, workers: int = 2, **spec: Any) -> dict[str, Any]:
    def template(role: str, gpus: str | None) -> dict[str, Any]:
        c: dict[str, Any] = {"name": role, "image": "nccl:1"}
        if role == "launcher":
            c["command"] = ["mpirun", "-np", str(workers * 8), "--hostfile", "/etc/mpi/hostfile", "all_reduce_perf"]
        if gpus:
            c["resources"] = {"limits": {"nvidia.com/gpu": gpus}, "requests": {"nvidia.com/gpu": gpus}}
        return {"spec": {"tolerations": TOL, "containers": [c]}}

    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": name},
            "spec": {"slotsPerWorker": 8, "runPolicy": {"cleanPodPolicy": "Running"},
                     "mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": template("launcher", None)},
                                         "Worker": {"replicas": workers, "template": template("worker", "8")}},
                     **spec}}  # fmt: skip


@pytest.fixture
def api() -> Iterator[EmulatedApi]:
    with EmulatedApi(CannedRunner(count=4), time_scale=0.0, namespaces=("default",)) as emulated:
        yield emulated


@pytest.fixture
def core(api: EmulatedApi) -> client.CoreV1Api:
    return client.CoreV1Api(api.api_client())


def raw(fn: Any, *args: Any, **kwargs: Any) -> Any:
    return json.loads(fn(*args, _preload_content=False, **kwargs).data)


def until(predicate: Any, timeout: float = 5.0) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("condition not reached")


def test_version_discovery_and_nodes(api: EmulatedApi, core: client.CoreV1Api) -> None:
    c = api.api_client()
    assert client.VersionApi(c).get_code().git_version.startswith("v1.30")
    assert {g.name for g in client.ApisApi(c).get_api_versions().groups} >= {"batch", "kubeflow.org"}
    resources = client.CustomObjectsApi(c).get_api_resources("kubeflow.org", "v2beta1")
    assert "mpijobs" in [r.name for r in resources.resources]
    node = core.read_node("gpu-0002")
    assert node.status.allocatable["nvidia.com/gpu"] == "8"
    assert node.metadata.labels["nvidia.com/gpu.product"] == "NVIDIA-H200"
    assert node.spec.taints[0].key == "nvidia.com/gpu"
    assert [c.type for c in node.status.conditions if c.status == "True"] == ["Ready"]


def test_malformed_objects_get_422_like_a_real_api_server(api: EmulatedApi) -> None:
    batch = client.BatchV1Api(api.api_client())
    bad = job("bad", image="")
    bad["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    with pytest.raises(ApiException) as info:
        batch.create_namespaced_job(NS, bad)
    body = json.loads(info.value.body)
    assert info.value.status == 422
    assert body["message"].startswith('Job.batch "bad" is invalid: [spec.template.spec.containers[0].image: Required')
    assert {c["field"] for c in body["details"]["causes"]} == {
        "spec.template.spec.containers[0].image", "spec.template.spec.restartPolicy"}  # fmt: skip
    custom = client.CustomObjectsApi(api.api_client())
    with pytest.raises(ApiException) as info:
        custom.create_namespaced_custom_object("kubeflow.org", "v2beta1", NS, "mpijobs",
                                               mpijob("m", mpiImplementation="openmpi"))  # fmt: skip
    assert info.value.status == 422
    assert 'spec.mpiImplementation: Unsupported value: "openmpi"' in json.loads(info.value.body)["message"]


def test_unknown_namespace_and_bad_token(api: EmulatedApi, tmp_path: Path) -> None:
    batch = client.BatchV1Api(api.api_client())
    with pytest.raises(ApiException) as info:
        batch.create_namespaced_job("nope", job("x"))
    assert (info.value.status, json.loads(info.value.body)["message"]) == (404, 'namespaces "nope" not found')
    wrong = write_kubeconfig(tmp_path / "kubeconfig", api.url, "wrong-token", NS)
    with pytest.raises(ApiException) as info:
        client.CoreV1Api(config.new_client_from_config(config_file=str(wrong))).list_node()
    assert info.value.status == 401


def test_job_runs_logs_events_and_selectors(api: EmulatedApi, core: client.CoreV1Api) -> None:
    batch = client.BatchV1Api(api.api_client())
    batch.create_namespaced_job(NS, job("a", node="gpu-0001"))
    batch.create_namespaced_job(NS, job("b", node="gpu-0002"))
    until(lambda: all(c.type == "Complete" for j in batch.list_namespaced_job(NS).items
                      for c in (j.status.conditions or [None]) if c))  # fmt: skip
    pods = raw(core.list_namespaced_pod, NS, label_selector="t in (a),job-name!=zzz")["items"]
    assert [p["spec"]["nodeName"] for p in pods] == ["gpu-0001"]
    assert pods[0]["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
    name = pods[0]["metadata"]["name"]
    assert '"node": "gpu-0001"' in core.read_namespaced_pod_log(name, NS)
    assert core.read_namespaced_pod_log(name, NS, tail_lines=0) == ""
    events = raw(core.list_namespaced_event, NS, field_selector=f"involvedObject.name={name}")["items"]
    assert [e["reason"] for e in events] == ["Scheduled", "Pulling", "Pulled", "Created", "Started"]


def test_watch_resumes_from_a_resource_version_and_answers_410_when_too_old() -> None:
    with EmulatedApi(CannedRunner(count=2), history=20, namespaces=("default",)) as api:
        core = client.CoreV1Api(api.api_client())
        rv = raw(core.list_namespaced_config_map, NS)["metadata"]["resourceVersion"]
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1", "labels": {"x": "1"}}, "data": {}}
        core.create_namespaced_config_map(NS, cm)
        resp = core.list_namespaced_config_map(NS, watch=True, resource_version=rv, timeout_seconds=1,
                                               label_selector="x=1", _preload_content=False)  # fmt: skip
        first = next(iter_watch(resp))
        assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "c1")
        resp.release_conn()
        for i in range(30):
            core.create_namespaced_config_map(NS, {**cm, "metadata": {"name": f"f{i}"}})
        resp = core.list_namespaced_config_map(NS, watch=True, resource_version=rv, timeout_seconds=1,
                                               _preload_content=False)  # fmt: skip
        events = list(iter_watch(resp))
        assert events[0]["type"] == "ERROR"
        assert events[0]["object"]["code"] == 410


def test_mpijob_lifecycle_like_the_operator(api: EmulatedApi, core: client.CoreV1Api) -> None:
    custom = client.CustomObjectsApi(api.api_client())
    custom.create_namespaced_custom_object("kubeflow.org", "v2beta1", NS, "mpijobs", mpijob("m", workers=2))

    def conditions() -> dict[str, str]:
        obj = custom.get_namespaced_custom_object("kubeflow.org", "v2beta1", NS, "mpijobs", "m")
        return {c["type"]: f"{c['status']}/{c['reason']}" for c in obj.get("status", {}).get("conditions", [])}

    done = until(lambda: conditions() if "Succeeded" in conditions() else None)
    assert done == {"Created": "True/MPIJobCreated", "Running": "False/MPIJobRunning",
                    "Succeeded": "True/MPIJobSucceeded"}  # fmt: skip
    hostfile = core.read_namespaced_config_map("m-config", NS).data["hostfile"]
    assert hostfile == "m-worker-0.m.default.svc slots=8\nm-worker-1.m.default.svc slots=8\n"
    pods = [p.metadata.name for p in core.list_namespaced_pod(NS).items]
    assert not any("worker" in p for p in pods), "cleanPodPolicy Running deletes the workers"
    custom.delete_namespaced_custom_object("kubeflow.org", "v2beta1", NS, "mpijobs", "m",
                                           propagation_policy="Foreground")  # fmt: skip
    assert core.list_namespaced_pod(NS).items == []
    assert core.list_namespaced_config_map(NS).items == []


def test_a_child_made_for_an_owner_already_deleted_is_collected_and_its_name_is_free_again(
    api: EmulatedApi, core: client.CoreV1Api
) -> None:
    """The operator reads an MPIJob, someone deletes it, the operator then makes its workers: Kubernetes' garbage
    collector deletes a dependent whose owners are all gone. The emulator kept it, holding its name against the
    workers of an MPIJob made again under the same name."""
    custom = client.CustomObjectsApi(api.api_client())
    where = ("kubeflow.org", "v2beta1", NS, "mpijobs")
    first = custom.create_namespaced_custom_object(*where, mpijob("m", workers=2))
    custom.delete_namespaced_custom_object(*where, "m")
    late = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "m-worker-0", "namespace": NS,
            "ownerReferences": [owner_ref(first)]}, "spec": {"containers": [{"name": "w", "image": "nccl:1"}]},
            "status": {"phase": "Pending"}}  # fmt: skip
    api.store.create("pods", late)  # what the operator's late create does
    assert "m-worker-0" not in [p.metadata.name for p in core.list_namespaced_pod(NS).items]
    api.store.create("pods", {**late, "metadata": {"name": "m-worker-0", "namespace": NS}})  # the name is free
    kept = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "n-0", "namespace": NS,
            "ownerReferences": [owner_ref(first), owner_ref(api.store.require("namespaces", "", NS))]},
            "spec": {"containers": [{"name": "w", "image": "nccl:1"}]}, "status": {"phase": "Pending"}}  # fmt: skip
    api.store.create("pods", kept)  # one owner of two still there: kept
    assert "n-0" in [p.metadata.name for p in core.list_namespaced_pod(NS).items]


def test_operator_rejects_an_mpijob_without_launcher_with_an_event(api: EmulatedApi, core: client.CoreV1Api) -> None:
    custom = client.CustomObjectsApi(api.api_client())
    body = mpijob("nolauncher")
    body["spec"]["mpiReplicaSpecs"]["launcher"] = body["spec"]["mpiReplicaSpecs"].pop("Launcher")
    custom.create_namespaced_custom_object("kubeflow.org", "v2beta1", NS, "mpijobs", body)
    event = until(lambda: raw(core.list_namespaced_event, NS, field_selector="reason=ValidationError")["items"])
    assert "must have Launcher replica spec" in event[0]["message"]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_reads_the_emulator() -> None:
    with EmulatedApi(CannedRunner(count=2), tls=True, namespaces=("default",)) as api:
        batch = client.BatchV1Api(api.api_client())
        batch.create_namespaced_job(NS, job("k"))
        out = subprocess.run(["kubectl", "--kubeconfig", str(api.kubeconfig_path), "get", "nodes,pods,jobs,mpijobs"],
                             capture_output=True, text=True, timeout=30, check=False)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "node/gpu-0001" in out.stdout
    assert "job.batch/k" in out.stdout


def test_a_command_the_simulator_refuses_fails_the_container(api: EmulatedApi, core: client.CoreV1Api) -> None:
    bad = job("explode")
    bad["spec"]["template"]["spec"]["containers"][0]["command"] = ["explode"]
    client.BatchV1Api(api.api_client()).create_namespaced_job(NS, bad)
    pod = until(lambda: [p for p in raw(core.list_namespaced_pod, NS)["items"] if p["status"]["phase"] == "Failed"])[0]
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 127
    assert "does not know this command" in core.read_namespaced_pod_log(pod["metadata"]["name"], NS)


def test_a_refused_kind_of_request_gets_503_and_every_other_request_its_answer(api: EmulatedApi) -> None:
    """`Faults.refused` names requests by method and resource (`request_kind`): those are answered 503 over
    HTTP, as an overloaded API server answers; the same resource with another method is served."""
    from acceptance.sim.kubeapi.faults import Faults, request_kind

    assert request_kind("GET", ["api", "v1", "namespaces", "default", "pods", "p", "log"]) == "GET pods/log"
    assert request_kind("DELETE", ["apis", "batch", "v1", "namespaces", "default", "jobs", "j"]) == "DELETE jobs"
    assert request_kind("GET", ["api", "v1", "nodes", "gpu-0001"]) == "GET nodes"
    with pytest.raises(ValueError, match="expected a method and a resource"):
        Faults(refused=frozenset({"pods/log"}))
    api.faults = Faults(refused=frozenset({"GET nodes"}))
    core = client.CoreV1Api(api.api_client())
    with pytest.raises(ApiException) as refused:
        core.read_node("gpu-0001")
    assert refused.value.status == 503
    assert "GET nodes refused" in str(refused.value.body)
    assert core.list_namespaced_pod("default").items == []
