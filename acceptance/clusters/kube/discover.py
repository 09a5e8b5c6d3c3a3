"""What a live Kubernetes cluster says about itself, for `acceptance init` to draft a profile from.

Read-only: the server version, whether (and which) MPIJob API is served, and the GPU nodes
with their labels (GPU feature discovery), allocatable resources and taints.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from acceptance.clusters.kube.client import KubeApi, build_api_client
from acceptance.clusters.kube.settings import KubeSettings
from acceptance.errors import KubeApiError


@dataclass(frozen=True)
class NodeFacts:
    name: str
    labels: Mapping[str, str]
    allocatable: Mapping[str, str]
    taints: tuple[Mapping[str, str], ...]
    ready: bool


@dataclass(frozen=True)
class KubeFacts:
    server_version: str
    mpijob_versions: tuple[str, ...]  # kubeflow.org versions that serve mpijobs (v2beta1 is the one usable)
    nodes: tuple[NodeFacts, ...]
    namespace_exists: bool


def _node(doc: Mapping[str, Any]) -> NodeFacts:
    meta, spec, status = doc["metadata"], doc.get("spec") or {}, doc.get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ())
    return NodeFacts(
        name=meta["name"],
        labels=dict(meta.get("labels") or {}),
        allocatable={str(k): str(v) for k, v in (status.get("allocatable") or {}).items()},
        taints=tuple({str(k): str(v) for k, v in t.items()} for t in spec.get("taints") or ()),
        ready=ready,
    )


def discover(settings: KubeSettings, node_selector: str | None = None, api_client: Any | None = None) -> KubeFacts:
    """Read the facts; a ClusterError (credentials, connection) when the cluster cannot be asked."""
    api = KubeApi(api_client if api_client is not None else build_api_client(settings), settings.api_retry)
    try:
        version = api.call("get server version", api.version.get_code)
        if node_selector:
            nodes = api.call("list nodes", api.core.list_node, label_selector=node_selector)
        else:
            nodes = api.call("list nodes", api.core.list_node)
        served = []
        groups = api.call("list API groups", api.apis.get_api_versions)
        for group in groups.get("groups") or ():
            if group.get("name") != "kubeflow.org":
                continue
            for gv in group.get("versions") or ():
                doc = api.call(f"discover kubeflow.org/{gv['version']}", api.custom.get_api_resources, "kubeflow.org",
                               gv["version"])  # fmt: skip
                if any(r.get("name") == "mpijobs" for r in doc.get("resources") or ()):
                    served.append(str(gv["version"]))
        try:
            api.call(f"get namespace {settings.namespace}", api.core.read_namespace, settings.namespace)
            namespace_exists = True
        except KubeApiError as exc:
            if exc.status not in (403, 404):
                raise
            namespace_exists = False
    finally:
        api.close()
    return KubeFacts(
        server_version=str(version.get("gitVersion", "")),
        mpijob_versions=tuple(served),
        nodes=tuple(sorted((_node(n) for n in nodes.get("items") or ()), key=lambda n: n.name)),
        namespace_exists=namespace_exists,
    )
