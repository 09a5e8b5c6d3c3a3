"""`acceptance bundle --job SELECTOR` on Kubernetes: the official client against the API emulator, a customer's
MPIJob that an XID stops mid-run; the bundle reads the job's pods (logs, placement) and the nodes' state."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from acceptance.cli import main
from acceptance.sim.kubeapi import EmulatedApi
from tests.incident_logs import NODES, TRAIN, XID_GPU, XID_NODE, XID_STEP, runner

pytestmark = pytest.mark.slow
NS = "team-llm"
LOST = NODES.index(XID_NODE) * 8 + XID_GPU


def _mpijob() -> dict:
    container = {"name": "trainer", "image": "registry.example/llm/train:2026.11@sha256:" + "ab" * 32}
    worker = {**container, "resources": {"limits": {"nvidia.com/gpu": 8}, "requests": {"nvidia.com/gpu": 8}}}
    launcher = {
        **container,
        "command": ["mpirun", "-np", "128", "--hostfile", "/etc/mpi/hostfile", "python", *TRAIN],
        "env": [{"name": "NCCL_IB_HCA", "value": "mlx5"}, {"name": "WANDB_API_KEY", "value": "s3cr3t-key"}],
    }
    template = {"metadata": {"labels": {"app": "llm-train"}}}
    tolerate = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    return {
        "apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
        "metadata": {"name": "llm", "namespace": NS, "labels": {"app": "llm-train"}},
        "spec": {
            "slotsPerWorker": 8, "runPolicy": {"cleanPodPolicy": "None", "backoffLimit": 0},
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": {**template, "spec": {
                    "containers": [launcher], "tolerations": tolerate}}},
                "Worker": {"replicas": 16, "template": {**template, "spec": {
                    "containers": [worker], "tolerations": tolerate}}},
            },
        },
    }  # fmt: skip


def _wait_failed(api: EmulatedApi, deadline_s: float = 30) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        mj = api.store.get("mpijobs", NS, "llm")
        conds = {c["type"]: c["status"] for c in (mj or {}).get("status", {}).get("conditions") or ()}
        if conds.get("Failed") == "True" or conds.get("Succeeded") == "True":
            return
        time.sleep(0.05)
    raise AssertionError("the MPIJob did not finish")


def test_bundle_reads_the_jobs_pods_and_the_affected_nodes_state(tmp_path: Path, capsys) -> None:
    sim = runner(f"gpu-xid@{XID_NODE}:{XID_GPU}", at_step=XID_STEP)
    with EmulatedApi(sim, time_scale=0.0, namespaces=("default", NS)) as api:
        from kubernetes import client

        with api.api_client() as api_client:
            client.CustomObjectsApi(api_client).create_namespaced_custom_object(
                "kubeflow.org", "v2beta1", NS, "mpijobs", _mpijob()
            )
        _wait_failed(api)
        folder = tmp_path / "baselines" / "prod"
        folder.mkdir(parents=True)
        (folder / "cluster.yaml").write_text(yaml.safe_dump({
            "cluster": "prod", "backend": "kube",
            "kube": {"kubeconfig": str(api.kubeconfig_path), "namespace": "recovery-acceptance",
                     "images": {"nccl": "nccl-tests:x", "dcgm": "dcgm:x"}},
            "provider": {"cluster_id": "c-0042", "data_center": "fra-2"},
            "nodes": {"names": NODES, "gpus_per_node": 8}, "nccl": {"tests": [{"args": ["all_reduce_perf"]}]},
            "dcgm": {"level": 1}, "margins": {},
            "severity": {"levels": {"down": {"respond": "15m", "restore": "4h"}}},
        }))  # fmt: skip
        out = tmp_path / "bundle"
        status = main(["bundle", "--cluster", "prod", "--baselines-dir", str(tmp_path / "baselines"),
                       "--job", "app=llm-train", "--namespace", NS, "--reports-dir", str(tmp_path / "reports"),
                       "--out", str(out), "--no-sign", "--ticket", "INC-42"])  # fmt: skip
        assert status == 0, capsys.readouterr()
    doc = json.loads((out / "bundle.json").read_text())
    placed = {p["name"]: p["node"] for p in json.loads((out / "evidence/cluster/job-pods.json").read_text())}
    assert len(placed) == 17
    assert set(placed.values()) >= set(NODES)
    assert [i["path"] for i in doc["inputs"] if "pytorch-nccl" in i["kinds"]] == [
        p for p in (f"pod/{n}" for n in placed) if "launcher" in p
    ]
    # 1: the affected node, named through the pod placement (mpirun names the worker's host)
    assert doc["cluster"]["provider"] == {"cluster_id": "c-0042", "data_center": "fra-2"}
    assert [a["node"] for a in doc["cluster"]["affected"]][:1] == [XID_NODE]
    assert doc["simulated"] is True  # the emulator's nodes say so
    # 3: every rank from placement (by-slot over the hostfile's workers), the lost one confirmed by mpirun
    ranks = {e["rank"]: e for e in doc["ranks"]["entries"]}
    assert len(ranks) == 128
    assert ranks[LOST]["node"] == XID_NODE
    assert ranks[LOST]["sources"] == ["mpirun", "placement"]
    worker = next(p for p, n in placed.items() if n == XID_NODE)
    assert ranks[LOST]["host"] == worker
    assert doc["ranks"]["conflicts"] == []
    # 2 and 4: the hang window and the lost rank's CUDA error
    assert (doc["window"]["how"], doc["window"]["first_bad_step"]) == ("hang", XID_STEP)
    assert doc["nccl"]["errors"][0]["kind"] == "cuda-error"
    assert doc["nccl"]["errors"][0]["nodes"] == [XID_NODE]
    # 6: the node's conditions and allocatable GPUs from the cluster
    [node] = [n for n in doc["node_evidence"] if n["node"] == XID_NODE]
    assert node["allocatable_gpus"] == 8
    assert {c["type"]: c["bad"] for c in node["conditions"]}["Ready"] is False
    # 7: now the job's image with its digest; secrets of the job's env never reach the bundle
    pods = (out / "evidence/cluster/job-pods.json").read_text()
    assert "s3cr3t-key" not in pods
    assert "s3cr3t-key" not in (out / "bundle.json").read_text()
    assert doc["severity"]["level"] == "down"
    assert doc["severity"]["clocks"][0]["name"] == "respond"
