"""How to reach a Kubernetes cluster and what to put in its pods (the profile's ``kube:``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from acceptance.clusters.base import EnvValue
from acceptance.errors import ProfileError
from acceptance.profile import workload_env
from acceptance.units import parse_duration

MANAGED_BY_KEY = "app.kubernetes.io/managed-by"
MANAGED_BY = "recovery-acceptance"
RUN_ID_KEY = "recovery-acceptance/run-id"
WORKLOAD_KEY = "recovery-acceptance/workload"
KIND_KEY = "recovery-acceptance/kind"


def _seconds(value: object, key: str, source: str, *, allow_zero: bool = False) -> float:
    try:
        return parse_duration(value, allow_zero=allow_zero)  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise ProfileError(f"{source}: kube.{key}: {exc}") from None


@dataclass(frozen=True)
class ApiRetry:
    """Retries of transient API errors: `attempts` in all, backoff doubling from `backoff_s`."""

    attempts: int = 6
    backoff_s: float = 0.2
    max_backoff_s: float = 5.0
    connect_timeout_s: float = 10.0  # every request: a black-holed connection fails, and is retried, in bounded time
    read_timeout_s: float = 60.0

    @property
    def request_timeout(self) -> tuple[float, float]:
        """The client's ``_request_timeout``: (connect, read) seconds."""
        return (self.connect_timeout_s, self.read_timeout_s)


@dataclass(frozen=True)
class KubeSettings:
    kubeconfig: str | None = None
    context: str | None = None
    namespace: str = "default"
    images: Mapping[str, str] = field(default_factory=dict)
    gpu_resource: str = "nvidia.com/gpu"
    rdma_resources: Mapping[str, int] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, Any], ...] = ()
    env: Mapping[str, EnvValue] = field(default_factory=dict)
    service_account: str | None = None
    ttl_seconds_after_finished: int = 600
    scheduling_timeout_s: float = 300.0
    api_retry: ApiRetry = field(default_factory=ApiRetry)
    ssh_port: int = 22
    lease_s: float = 90.0  # a run renews its lease every third of this; a crashed run's objects are leftovers after it
    cleanup_timeout_s: float = 60.0  # how long a run's cleanup retries the API before naming what it left

    def image(self, kind: str) -> str:
        try:
            return self.images[kind]
        except KeyError:
            raise ProfileError(f"kube.images has no {kind!r} image (have: {', '.join(self.images)})") from None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str = "cluster.yaml") -> KubeSettings:
        """Build from the profile's ``kube:`` mapping (durations as ``300``, ``5m``, ``1h``)."""
        known = {
            "kubeconfig", "context", "namespace", "images", "gpu_resource", "rdma_resources",
            "tolerations", "env", "service_account", "ttl_seconds_after_finished",
            "scheduling_timeout", "scheduling_timeout_s", "api_retry", "ssh_port", "lease", "prepull_images",
            "cleanup_timeout",
        }  # fmt: skip
        unknown = sorted(set(data) - known)
        if unknown:
            raise ProfileError(f"{source}: kube: unknown keys {', '.join(unknown)} (known: {sorted(known)})")
        timeout = data.get("scheduling_timeout_s", data.get("scheduling_timeout", 300))
        retry = data.get("api_retry") or {}
        if not isinstance(retry, Mapping):
            raise ProfileError(f"{source}: kube.api_retry: expected a mapping with attempts and backoff")
        return cls(
            kubeconfig=os.path.expanduser(str(data["kubeconfig"])) if data.get("kubeconfig") else None,
            context=data.get("context"),
            namespace=str(data.get("namespace", "default")),
            images={str(k): str(v) for k, v in dict(data.get("images") or {}).items()},
            gpu_resource=str(data.get("gpu_resource", "nvidia.com/gpu")),
            rdma_resources={str(k): int(v) for k, v in dict(data.get("rdma_resources") or {}).items()},
            tolerations=tuple(dict(t) for t in data.get("tolerations") or ()),
            env=workload_env(data.get("env")),
            service_account=data.get("service_account"),
            ttl_seconds_after_finished=int(data.get("ttl_seconds_after_finished", 600)),
            scheduling_timeout_s=_seconds(timeout, "scheduling_timeout", source),
            api_retry=ApiRetry(
                attempts=int(retry.get("attempts", 6)),
                backoff_s=_seconds(retry.get("backoff", 0.2), "api_retry.backoff", source, allow_zero=True),
                connect_timeout_s=_seconds(retry.get("connect_timeout", 10), "api_retry.connect_timeout", source),
                read_timeout_s=_seconds(retry.get("read_timeout", 60), "api_retry.read_timeout", source),
            ),
            ssh_port=int(data.get("ssh_port", 22)),
            lease_s=_seconds(data.get("lease", 90), "lease", source),
            cleanup_timeout_s=_seconds(data.get("cleanup_timeout", 60), "cleanup_timeout", source),
        )
