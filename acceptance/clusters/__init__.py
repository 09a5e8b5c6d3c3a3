"""Where workloads run. `open(profile, run_id)` gives the profile's backend as a `Cluster`.

Nothing outside this package names a backend class. A backend the profile names but this
harness cannot honour stops the run with a usage error; it never falls back to another.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from acceptance.clusters.base import Cluster
from acceptance.errors import ClusterError, UsageError

if TYPE_CHECKING:
    from acceptance.profile import Profile

__all__ = ["Cluster", "Draft", "draft_profile", "open"]


@dataclass(frozen=True)
class Draft:
    """A profile drafted from a live cluster: its text, and what could not be found (with what to do)."""

    text: str
    notes: tuple[str, ...]


def open(
    profile: Profile,
    run_id: str,
    *,
    faults: Sequence[str] = (),
    attach: Mapping[str, str] | None = None,
) -> Cluster:
    """The profile's backend for run `run_id`.

    `attach` is another process's `Cluster.attach_info()`: join that run's cluster (an
    xdist worker joins the controller's) instead of starting one. `faults` are simulator
    faults, refused by every backend but ``sim``.
    """
    if faults and profile.backend != "sim":
        raise UsageError(f"--sim-fault needs a simulated cluster; {profile.name} uses backend {profile.backend}")
    try:
        if profile.backend == "kube":
            from acceptance.clusters.kube import KubeCluster

            return KubeCluster.from_profile(profile, run_id)
        if profile.backend == "sim":
            from acceptance.clusters.sim import EmbeddedSimCluster

            if attach is not None:
                return EmbeddedSimCluster.attach(profile, run_id, attach)
            return EmbeddedSimCluster.start(profile, run_id, faults)
    except ClusterError as exc:  # credentials that do not load, an emulator that does not start
        raise UsageError(f"{profile.path}: backend {profile.backend}: {exc}") from None
    if profile.backend == "ssh":
        raise UsageError(
            f"{profile.path}: backend ssh is not available in this version of recovery-acceptance; nothing was "
            "started on any cluster. Use a profile with backend kube or sim"
        )
    raise UsageError(f"{profile.path}: unknown backend {profile.backend!r} (known: kube, sim, ssh)")


def draft_profile(
    name: str,
    backend: str,
    *,
    namespace: str = "default",
    context: str | None = None,
    kubeconfig: str | None = None,
    node_selector: str | None = None,
) -> Draft:
    """Read a live cluster and draft ``baselines/NAME/cluster.yaml`` for it (`acceptance init`)."""
    if backend != "kube":
        raise UsageError(f"acceptance init drafts Kubernetes profiles; backend {backend!r} is not supported yet")
    from acceptance.clusters.kube import KubeSettings
    from acceptance.clusters.kube.discover import discover
    from acceptance.clusters.kube.draft import draft_kube_profile

    settings = KubeSettings(kubeconfig=kubeconfig, context=context, namespace=namespace)
    try:
        facts = discover(settings, node_selector)
    except ClusterError as exc:
        raise UsageError(str(exc)) from None
    try:
        text, notes = draft_kube_profile(name, facts, namespace=namespace, context=context, kubeconfig=kubeconfig)
    except ValueError as exc:
        where = f" matching {node_selector!r}" if node_selector else ""
        raise UsageError(f"{exc}{where}") from None
    return Draft(text, notes)
