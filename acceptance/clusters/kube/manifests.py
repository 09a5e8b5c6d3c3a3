"""Workload specs → Kubernetes manifests (pure: same input, same dicts).

nccl-tests and multi-node smoke runs become Kubeflow ``MPIJob``s (v2beta1), DCGM
diagnostics and one-node smoke runs ``batch/v1`` Jobs. The operator pitfalls these
manifests avoid: ``cleanPodPolicy`` set (else finished workers keep their GPUs),
explicit ``-np`` and ``--hostfile`` (Open MPI 5), workers Ready before the launcher,
one worker per node, ``backoffLimit: 0`` and deadlines on the launcher.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from acceptance.clusters.base import DcgmWorkload, EnvValue, NcclWorkload, NodeWorkload, SmokeWorkload, Workload
from acceptance.clusters.kube.settings import (
    KIND_KEY,
    MANAGED_BY,
    MANAGED_BY_KEY,
    RUN_ID_KEY,
    WORKLOAD_KEY,
    KubeSettings,
)

MPI_API_VERSION = "kubeflow.org/v2beta1"
HOSTFILE = "/etc/mpi/hostfile"
HOSTNAME_KEY = "kubernetes.io/hostname"
GPU_TOLERATION: Mapping[str, str] = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
_INVALID = re.compile(r"[^a-z0-9-]+")
_LABEL_INVALID = re.compile(r"[^A-Za-z0-9._-]+")


def label_value(text: str) -> str:
    """A valid label value (≤ 63 chars, alphanumeric at both ends) that stays readable."""
    value = _LABEL_INVALID.sub("-", text).strip("-_.")
    if len(value) > 63:
        digest = hashlib.sha256(text.encode()).hexdigest()[:8]
        value = value[:54].rstrip("-_.") + "-" + digest
    return value or "x"


def object_name(workload: str, run_id: str, reserve: int = 0) -> str:
    """A DNS-1035 name for a workload's object, unique per run, short enough for `reserve` more chars."""
    limit = 63 - reserve
    base = _INVALID.sub("-", f"{workload}-{run_id}".lower()).strip("-")
    if not base or not base[0].isalpha():
        base = "ra-" + base
    if len(base) > limit:
        digest = hashlib.sha256(base.encode()).hexdigest()[:8]
        base = base[: limit - 9].rstrip("-") + "-" + digest
    return base


def run_labels(run_id: str, workload: str, kind: str) -> dict[str, str]:
    return {
        MANAGED_BY_KEY: MANAGED_BY,
        RUN_ID_KEY: label_value(run_id),
        WORKLOAD_KEY: label_value(workload),
        KIND_KEY: kind,
    }


def run_selector(run_id: str) -> str:
    return f"{MANAGED_BY_KEY}={MANAGED_BY},{RUN_ID_KEY}={label_value(run_id)}"


def managed_selector() -> str:
    return f"{MANAGED_BY_KEY}={MANAGED_BY}"


def mpirun_argv(nprocs: int, env_names: Sequence[str], argv: Sequence[str]) -> list[str]:
    """The launcher's command: explicit rank count and hostfile (Open MPI 5 ignores the operator's env)."""
    cmd = ["mpirun", "--allow-run-as-root", "-np", str(nprocs), "--hostfile", HOSTFILE, "--bind-to", "none"]
    for name in env_names:
        cmd += ["-x", name]
    return [*cmd, *argv]


def _env_list(env: Mapping[str, EnvValue]) -> list[dict[str, Any]]:
    """Container env entries; a secret reference stays a reference (`valueFrom`), never a value."""
    return [
        {"name": k, **dict(v)} if isinstance(v, Mapping) else {"name": k, "value": str(v)}
        for k, v in sorted(env.items())
    ]


def _tolerations(settings: KubeSettings) -> list[dict[str, Any]]:
    out = [dict(GPU_TOLERATION)]
    for tol in settings.tolerations:
        if dict(tol) not in out:
            out.append(dict(tol))
    return out


def _gpu_resources(settings: KubeSettings, gpus: int, *, rdma: bool = True) -> dict[str, dict[str, Any]]:
    # quantities as strings: the official client (v37) rejects integers in resource maps
    amounts: dict[str, Any] = {settings.gpu_resource: str(gpus)}
    if rdma:
        amounts.update({k: str(v) for k, v in sorted(settings.rdma_resources.items())})
    return {"requests": dict(amounts), "limits": dict(amounts)}


def _pod_spec_common(settings: KubeSettings) -> dict[str, Any]:
    spec: dict[str, Any] = {"enableServiceLinks": False, "automountServiceAccountToken": False}
    if settings.service_account:
        spec["serviceAccountName"] = settings.service_account
        spec["automountServiceAccountToken"] = True
    return spec


def _metadata(name: str, namespace: str, labels: Mapping[str, str]) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": dict(labels)}


def node_job(
    settings: KubeSettings,
    run_id: str,
    *,
    workload: str,
    kind: str,
    node: str,
    image: str,
    argv: Sequence[str],
    resources: Mapping[str, Any],
    deadline_s: float,
    env: Mapping[str, EnvValue] | None = None,
    privileged: bool = False,
    shm: bool = False,
    container_name: str | None = None,
) -> dict[str, Any]:
    """One ``batch/v1`` Job pinned to `node`, GPU taints tolerated, no retries, a deadline."""
    labels = run_labels(run_id, workload, kind)
    container: dict[str, Any] = {"name": container_name or kind, "image": image, "command": list(argv)}
    if env is not None:
        container["env"] = _env_list(env)
    container["resources"] = dict(resources)
    if privileged:
        container["securityContext"] = {"privileged": True}
    pod_spec: dict[str, Any] = {
        **_pod_spec_common(settings),
        "restartPolicy": "Never",
        "nodeSelector": {HOSTNAME_KEY: node},
        "tolerations": _tolerations(settings),
        "containers": [container],
    }
    if shm:
        container["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
        pod_spec["volumes"] = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _metadata(object_name(workload, run_id, reserve=6), settings.namespace, labels),
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": max(1, math.ceil(deadline_s)),
            "ttlSecondsAfterFinished": settings.ttl_seconds_after_finished,
            "template": {"metadata": {"labels": dict(labels)}, "spec": pod_spec},
        },
    }


def dcgm_job(settings: KubeSettings, run_id: str, workload: DcgmWorkload) -> dict[str, Any]:
    """The node's diagnostic: all its GPUs, no NIC (the diagnostic uses none), privileged."""
    return node_job(
        settings, run_id, workload=workload.name, kind="dcgm", node=workload.node, image=settings.image("dcgm"),
        argv=workload.argv, resources=_gpu_resources(settings, workload.gpus, rdma=False),
        deadline_s=workload.deadline_s, privileged=True, container_name="dcgm-diag",
    )  # fmt: skip


def mpi_job(
    settings: KubeSettings,
    run_id: str,
    *,
    workload: str,
    kind: str,
    image: str,
    nodes: Sequence[str],
    gpus_per_node: int,
    argv: Sequence[str],
    env: Mapping[str, EnvValue],
    deadline_s: float,
) -> dict[str, Any]:
    """An ``MPIJob``: one worker per node of `nodes`, pinned, all GPUs; the launcher runs mpirun."""
    labels = run_labels(run_id, workload, kind)
    digits = len(str(max(len(nodes) - 1, 0)))
    name = object_name(workload, run_id, reserve=max(15, len("-worker-") + digits))
    merged = {**settings.env, **env}
    launcher_container = {
        "name": "launcher",
        "image": image,
        "command": mpirun_argv(len(nodes) * gpus_per_node, sorted(merged), argv),
        "env": _env_list(merged),
        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
    }
    worker_labels = {**labels, "training.kubeflow.org/job-role": "worker"}
    worker_container = {
        "name": "worker",
        "image": image,
        "command": ["/usr/sbin/sshd", "-De", "-p", str(settings.ssh_port)],
        "env": _env_list(merged),
        "resources": _gpu_resources(settings, gpus_per_node),
        "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
        "readinessProbe": {"tcpSocket": {"port": settings.ssh_port}, "periodSeconds": 2},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": HOSTNAME_KEY, "operator": "In", "values": list(nodes)}]}
                ]
            }
        },
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {
                        "matchLabels": {
                            RUN_ID_KEY: labels[RUN_ID_KEY],
                            WORKLOAD_KEY: labels[WORKLOAD_KEY],
                            "training.kubeflow.org/job-role": "worker",
                        }
                    },
                    "topologyKey": HOSTNAME_KEY,
                }
            ]
        },
    }
    worker_spec = {
        **_pod_spec_common(settings),
        "affinity": affinity,
        "tolerations": _tolerations(settings),
        "containers": [worker_container],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
    }
    launcher_spec = {
        **_pod_spec_common(settings),
        "tolerations": _tolerations(settings),
        "containers": [launcher_container],
    }
    return {
        "apiVersion": MPI_API_VERSION,
        "kind": "MPIJob",
        "metadata": _metadata(name, settings.namespace, labels),
        "spec": {
            "slotsPerWorker": gpus_per_node,
            "launcherCreationPolicy": "WaitForWorkersReady",
            "mpiImplementation": "OpenMPI",
            "runPolicy": {
                "cleanPodPolicy": "Running",
                "ttlSecondsAfterFinished": settings.ttl_seconds_after_finished,
                "activeDeadlineSeconds": max(1, math.ceil(deadline_s)),
                "backoffLimit": 0,
            },
            "mpiReplicaSpecs": {
                "Launcher": {
                    "replicas": 1,
                    "restartPolicy": "Never",
                    "template": {
                        "metadata": {"labels": {**labels, "training.kubeflow.org/job-role": "launcher"}},
                        "spec": launcher_spec,
                    },
                },
                "Worker": {
                    "replicas": len(nodes),
                    "restartPolicy": "Never",
                    "template": {"metadata": {"labels": worker_labels}, "spec": worker_spec},
                },
            },
        },
    }


def nccl_mpijob(settings: KubeSettings, run_id: str, workload: NcclWorkload) -> dict[str, Any]:
    return mpi_job(
        settings,
        run_id,
        workload=workload.name,
        kind="nccl",
        image=settings.image("nccl"),
        nodes=workload.nodes,
        gpus_per_node=workload.gpus_per_node,
        argv=workload.argv,
        env=workload.env,
        deadline_s=workload.deadline_s,
    )


def smoke_manifest(settings: KubeSettings, run_id: str, workload: SmokeWorkload) -> dict[str, Any]:
    """An MPIJob over the smoke nodes, or a plain Job when the smoke run needs one node."""
    if len(workload.nodes) > 1:
        return mpi_job(
            settings,
            run_id,
            workload=workload.name,
            kind="smoke",
            image=settings.image("smoke"),
            nodes=workload.nodes,
            gpus_per_node=workload.gpus_per_node,
            argv=workload.argv,
            env=workload.env,
            deadline_s=workload.deadline_s,
        )
    return node_job(
        settings, run_id, workload=workload.name, kind="smoke", node=workload.nodes[0],
        image=settings.image("smoke"), argv=workload.argv, env={**settings.env, **workload.env},
        resources=_gpu_resources(settings, workload.gpus_per_node), deadline_s=workload.deadline_s, shm=True,
    )  # fmt: skip


def manifest_for(settings: KubeSettings, run_id: str, workload: Workload) -> dict[str, Any]:
    if isinstance(workload, NcclWorkload):
        return nccl_mpijob(settings, run_id, workload)
    if isinstance(workload, DcgmWorkload):
        return dcgm_job(settings, run_id, workload)
    if isinstance(workload, NodeWorkload):
        return node_job(
            settings, run_id, workload=workload.name, kind="node", node=workload.node,
            image=settings.image(workload.image), argv=workload.argv, env=dict(settings.env),
            resources=_gpu_resources(settings, workload.gpus, rdma=workload.rdma), deadline_s=workload.deadline_s,
        )  # fmt: skip
    return smoke_manifest(settings, run_id, workload)
