"""Manifest builders: exact output, the operator pitfalls they avoid, and the real schemas."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest
from jsonschema import Draft7Validator

from acceptance.clusters.base import DcgmWorkload, NcclWorkload, SmokeWorkload, WorkloadResult
from acceptance.clusters.kube.client import api_error, redact
from acceptance.clusters.kube.manifests import (
    dcgm_job,
    label_value,
    manifest_for,
    mpirun_argv,
    nccl_mpijob,
    object_name,
    run_selector,
    smoke_manifest,
)
from acceptance.clusters.kube.settings import KubeSettings
from acceptance.errors import ProfileError
from tests.shared import K8S, needs_shared

SETTINGS = KubeSettings(
    namespace="ra",
    images={"nccl": "nccl:2.26", "dcgm": "dcgm:4.2.3", "smoke": "nemo:25.04"},
    rdma_resources={"rdma/ib": 8},
    tolerations=({"key": "gpu-under-test", "operator": "Exists", "effect": "NoSchedule"},),
    env={"NCCL_IB_HCA": "=mlx5_0,mlx5_1", "NCCL_SOCKET_IFNAME": "eth0"},
)
LABELS = {
    "app.kubernetes.io/managed-by": "recovery-acceptance",
    "recovery-acceptance/run-id": "r1",
    "recovery-acceptance/workload": "dcgm-gpu-07",
    "recovery-acceptance/kind": "dcgm",
}
NODES = tuple(f"gpu-{i:02d}" for i in range(1, 17))


def test_dcgm_job_is_exactly_the_documented_manifest() -> None:
    """One Job per node: pinned by hostname, all GPUs (and no NIC) requested and limited, no retries."""
    job = dcgm_job(SETTINGS, "r1", DcgmWorkload("dcgm-gpu-07", "gpu-07", 8, ("dcgmi", "diag", "-r", "3", "-j"), 1800))
    resources = {"nvidia.com/gpu": "8"}
    assert job == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "dcgm-gpu-07-r1", "namespace": "ra", "labels": LABELS},
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": 1800,
            "ttlSecondsAfterFinished": 600,
            "template": {
                "metadata": {"labels": LABELS},
                "spec": {
                    "enableServiceLinks": False,
                    "automountServiceAccountToken": False,
                    "restartPolicy": "Never",
                    "nodeSelector": {"kubernetes.io/hostname": "gpu-07"},
                    "tolerations": [
                        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                        {"key": "gpu-under-test", "operator": "Exists", "effect": "NoSchedule"},
                    ],
                    "containers": [
                        {
                            "name": "dcgm-diag",
                            "image": "dcgm:4.2.3",
                            "command": ["dcgmi", "diag", "-r", "3", "-j"],
                            "resources": {"requests": resources, "limits": resources},
                            "securityContext": {"privileged": True},
                        }
                    ],
                },
            },
        },
    }


def test_mpijob_pins_one_worker_per_node_and_runs_mpirun_explicitly() -> None:
    mj = nccl_mpijob(SETTINGS, "r1", NcclWorkload("all-reduce", NODES, 8, ("all_reduce_perf", "-b", "8"), {}, 900))
    spec = mj["spec"]
    assert spec["slotsPerWorker"] == 8
    assert spec["launcherCreationPolicy"] == "WaitForWorkersReady"
    assert spec["runPolicy"] == {
        "cleanPodPolicy": "Running",
        "ttlSecondsAfterFinished": 600,
        "activeDeadlineSeconds": 900,
        "backoffLimit": 0,
    }
    worker = spec["mpiReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 16
    pod = worker["template"]["spec"]
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": list(NODES)}]}]
    anti = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert anti["topologyKey"] == "kubernetes.io/hostname"
    assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "8", "rdma/ib": "8"}
    assert pod["containers"][0]["readinessProbe"] == {"tcpSocket": {"port": 22}, "periodSeconds": 2}
    launcher = spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    assert launcher["command"] == [
        "mpirun", "--allow-run-as-root", "-np", "128", "--hostfile", "/etc/mpi/hostfile", "--bind-to", "none",
        "-x", "NCCL_IB_HCA", "-x", "NCCL_SOCKET_IFNAME", "all_reduce_perf", "-b", "8",
    ]  # fmt: skip
    assert {"name": "NCCL_IB_HCA", "value": "=mlx5_0,mlx5_1"} in launcher["env"]
    assert "nvidia.com/gpu" not in json.dumps(launcher["resources"])


def test_workload_env_overrides_profile_env() -> None:
    mj = nccl_mpijob(SETTINGS, "r1", NcclWorkload("a", NODES[:2], 8, ("x",), {"NCCL_SOCKET_IFNAME": "ib0"}, 60))
    env = mj["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "NCCL_SOCKET_IFNAME", "value": "ib0"} in env


def test_smoke_is_a_job_on_one_node_and_an_mpijob_on_several() -> None:
    one = smoke_manifest(SETTINGS, "r1", SmokeWorkload("smoke", NODES[:1], 8, ("python", "train.py"), {}, 600))
    many = smoke_manifest(SETTINGS, "r1", SmokeWorkload("smoke", NODES[:4], 8, ("python", "train.py"), {}, 600))
    assert (one["kind"], many["kind"]) == ("Job", "MPIJob")
    assert one["spec"]["template"]["spec"]["nodeSelector"] == {"kubernetes.io/hostname": NODES[0]}
    assert many["metadata"]["labels"]["recovery-acceptance/kind"] == "smoke"


def test_names_stay_valid_for_long_workloads_and_run_ids() -> None:
    name = object_name("all-reduce-perf-across-the-whole-cluster-" * 3, "2026-11-30T00-00-00Z-abcdef", reserve=15)
    assert len(name) <= 48
    assert name[0].isalpha()
    assert name == name.lower()
    assert object_name("X_y", "R") == "x-y-r"
    assert len(label_value("a" * 100)) <= 63
    assert label_value("dcgm gpu/07") == "dcgm-gpu-07"
    assert run_selector("r1") == "app.kubernetes.io/managed-by=recovery-acceptance,recovery-acceptance/run-id=r1"


def test_mpirun_passes_every_env_name_with_x() -> None:
    assert mpirun_argv(16, ["A", "B"], ["t"]) == [
        "mpirun", "--allow-run-as-root", "-np", "16", "--hostfile", "/etc/mpi/hostfile", "--bind-to", "none",
        "-x", "A", "-x", "B", "t",
    ]  # fmt: skip


def test_settings_from_profile_mapping() -> None:
    profile = {"namespace": "x", "scheduling_timeout": "5m", "images": {"dcgm": "d"}, "rdma_resources": {"rdma/ib": 8},
               "api_retry": {"attempts": 3, "backoff": "1s"}}  # fmt: skip
    s = KubeSettings.from_mapping(profile)
    assert (s.namespace, s.scheduling_timeout_s, s.api_retry.attempts, s.api_retry.backoff_s) == ("x", 300.0, 3, 1.0)
    with pytest.raises(ProfileError, match="unknown keys namspace"):
        KubeSettings.from_mapping({"namspace": "x"})
    with pytest.raises(ProfileError, match=r"kube.scheduling_timeout: 'soon' is not a duration"):
        KubeSettings.from_mapping({"scheduling_timeout": "soon"})
    assert KubeSettings.from_mapping({"scheduling_timeout": "1h30m"}).scheduling_timeout_s == 5400.0
    assert KubeSettings.from_mapping({"api_retry": {"backoff": 0}}).api_retry.backoff_s == 0.0
    with pytest.raises(ProfileError, match="must be positive"):
        KubeSettings.from_mapping({"scheduling_timeout": 0})
    with pytest.raises(ProfileError, match="no 'nccl' image"):
        SETTINGS.__class__().image("nccl")


def test_credentials_never_reach_error_text() -> None:
    assert "s3cr3t" not in redact("Authorization: Bearer s3cr3t.tok-en")
    assert "s3cr3t" not in redact('{"token": "s3cr3t"}')
    err = api_error("create Job x", 403, "forbidden: Bearer s3cr3t", {"spec": {"token": "s3cr3t"}})
    assert "s3cr3t" not in str(err)
    assert "HTTP 403" in str(err)
    assert "sent:" in str(err)


def test_rank_placement_maps_hosts_to_pods_and_nodes() -> None:
    result = WorkloadResult("a", "nccl", "", 0, "succeeded", "", None, None,
                       {"j-worker-0": "gpu-01", "j-worker-1": "gpu-02"}, (), (), "")  # fmt: skip
    ranks = result.rank_placement({0: "j-worker-0", 8: "j-worker-1.j.ns.svc", 9: "gpu-02", 10: "nowhere"})
    assert [(r.pod, r.node) for r in ranks.values()] == [
        ("j-worker-0", "gpu-01"), ("j-worker-1", "gpu-02"), ("j-worker-1", "gpu-02"), (None, None),
    ]  # fmt: skip


# ---------------------------------------------------------------- real schemas


@cache
def _validator(relative: str, pointer: tuple[str, ...] = ()) -> Draft7Validator:
    schema: Any = json.loads((K8S / relative).read_text())
    for key in pointer:
        schema = schema[key]
    return Draft7Validator(schema)


def _errors(validator: Draft7Validator, doc: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]


WORKLOADS = [
    DcgmWorkload("dcgm-gpu-01", "gpu-01", 8, ("dcgmi", "diag", "-r", "3", "-j"), 3600),
    NcclWorkload("all-reduce", NODES, 8, ("all_reduce_perf", "-b", "1M", "-e", "16G", "-f", "2", "-g", "1"), {}, 900),
    SmokeWorkload("smoke", NODES[:2], 8, ("python", "pretrain_gpt.py"), {"NCCL_DEBUG": "WARN"}, 1200),
    SmokeWorkload("smoke-one", NODES[:1], 8, ("python", "pretrain_gpt.py"), {}, 1200),
]


@needs_shared
@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: w.name)
def test_manifests_validate_against_the_real_strict_schemas(workload: Any) -> None:
    """The strict MPIJob v2beta1 schema, and the Kubernetes 1.30 strict Job/Pod schemas."""
    manifest = manifest_for(SETTINGS, "r1", workload)
    pod_spec = _validator("schemas/v1.30.10-standalone-strict/pod-v1.json", ("properties", "spec"))
    if manifest["kind"] == "MPIJob":
        assert _errors(_validator("mpijob-v2beta1-strict.schema.json"), manifest) == []
        for role in ("Launcher", "Worker"):
            assert _errors(pod_spec, manifest["spec"]["mpiReplicaSpecs"][role]["template"]["spec"]) == []
    else:
        assert _errors(_validator("schemas/v1.30.10-standalone-strict/job-batch-v1.json"), manifest) == []


@needs_shared
def test_the_schema_check_can_fail() -> None:
    """A misspelled field is caught, so the validation above means something."""
    manifest = manifest_for(SETTINGS, "r1", WORKLOADS[1])
    manifest["spec"]["slotPerWorker"] = manifest["spec"].pop("slotsPerWorker")
    assert any("slotPerWorker" in e for e in _errors(_validator("mpijob-v2beta1-strict.schema.json"), manifest))
