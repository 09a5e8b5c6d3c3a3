"""Where workloads run. `open(profile, run_id)` gives the profile's backend as a `Cluster`.

Nothing outside this package names a backend class. A backend the profile names but this
harness cannot honour stops the run with a usage error; it never falls back to another.
Backends: ``kube``, ``sim`` (kube against the emulator), ``ssh`` (with a ``sim`` section: the
SSH backend against simulated hosts behind a real sshd, ``--cluster=sim-ssh``), ``slurm`` (with a ``sim``
section: a real Slurm on loopback, ``--cluster=sim-slurm``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from acceptance.clusters.base import Cluster
from acceptance.errors import ClusterError, UsageError

if TYPE_CHECKING:
    from acceptance.clusters.slurm.draft import SlurmAccess
    from acceptance.clusters.ssh.draft import HostAccess
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
    ssh_accept_new: bool = False,
) -> Cluster:
    """The profile's backend for run `run_id`.

    `attach` is another process's `Cluster.attach_info()`: join that run's cluster (an
    xdist worker joins the controller's) instead of starting one. `faults` are simulator
    faults, refused by every backend but a simulated one (``sim``, or ``ssh`` with a ``sim``
    section). `ssh_accept_new` accepts unknown SSH host keys (``--ssh-insecure-accept-new``).
    """
    simulated = profile.backend == "sim" or (profile.backend in ("ssh", "slurm") and profile.sim is not None)
    if faults and not simulated:
        raise UsageError(f"--sim-fault needs a simulated cluster; {profile.name} uses backend {profile.backend}")
    if profile.backend == "sim" and any(f.partition("@")[0].strip() == "gpu-busy" for f in faults):
        raise UsageError("--sim-fault gpu-busy: a busy GPU shows through nvidia-smi on SSH hosts; "
                         "use --cluster=sim-ssh (the Kubernetes emulator has no nvidia-smi)")  # fmt: skip
    if ssh_accept_new and profile.backend not in ("ssh", "slurm"):
        raise UsageError(f"--ssh-insecure-accept-new applies to SSH clusters; {profile.name} uses {profile.backend}")
    try:
        if profile.backend == "kube":
            from acceptance.clusters.kube import KubeCluster

            return KubeCluster.from_profile(profile, run_id)
        if profile.backend == "sim":
            from acceptance.clusters.sim import EmbeddedSimCluster

            if attach is not None:
                return EmbeddedSimCluster.attach(profile, run_id, attach)
            return EmbeddedSimCluster.start(profile, run_id, faults)
        if profile.backend == "ssh" and profile.sim is not None:
            from acceptance.clusters.ssh.simulated import SimulatedSshCluster

            if attach is not None:
                return SimulatedSshCluster.attach(profile, run_id, attach)
            return SimulatedSshCluster.start(profile, run_id, faults, accept_new=ssh_accept_new)
        if profile.backend == "slurm" and profile.sim is not None:
            from acceptance.clusters.slurm.simulated import SimulatedSlurmCluster

            if attach is not None:
                return SimulatedSlurmCluster.attach(profile, run_id, attach)
            return SimulatedSlurmCluster.start(profile, run_id, faults)
        if profile.backend == "slurm":
            from acceptance.clusters.slurm import SlurmCluster
            from acceptance.clusters.slurm.transport import LocalTransport, LoginTransport
            from acceptance.profile import SlurmSettings

            slurm = profile.slurm or SlurmSettings()
            transport = LoginTransport(slurm.login, accept_new=ssh_accept_new) if slurm.login else LocalTransport()
            return SlurmCluster(profile, run_id, transport, slurm)
        if profile.backend == "ssh":
            from acceptance.clusters.ssh import SshCluster

            accept_new = bool(attach.get("accept_new")) if attach is not None else ssh_accept_new
            return SshCluster(profile, run_id, accept_new=accept_new)
    except ClusterError as exc:  # credentials that do not load, an emulator or sshd that does not start
        raise UsageError(f"{profile.path}: backend {profile.backend}: {exc}") from None
    raise UsageError(f"{profile.path}: unknown backend {profile.backend!r} (known: kube, sim, slurm, ssh)")


def draft_profile(
    name: str,
    backend: str,
    *,
    namespace: str = "default",
    context: str | None = None,
    kubeconfig: str | None = None,
    node_selector: str | None = None,
    hosts: HostAccess | None = None,
    slurm: SlurmAccess | None = None,
) -> Draft:
    """Read a live cluster and draft ``baselines/NAME/cluster.yaml`` for it (`acceptance init`): Kubernetes
    by its API, SSH hosts (`hosts`) or a Slurm partition (`slurm`) by the preflight's own inventory."""
    if backend == "slurm":
        from acceptance.clusters.slurm.draft import discover_slurm, draft_slurm_profile

        if slurm is None:
            raise UsageError("acceptance init on Slurm needs the partition (--slurm --partition P)")
        try:
            slurm_text, slurm_notes = draft_slurm_profile(name, slurm, discover_slurm(slurm))
        except (ClusterError, ValueError) as exc:
            raise UsageError(str(exc)) from None
        return Draft(slurm_text, slurm_notes)
    if backend == "ssh":
        from acceptance.clusters.ssh.draft import discover_hosts, draft_ssh_profile

        if hosts is None or not hosts.hosts:
            raise UsageError("acceptance init over SSH needs the hosts (--hosts FILE or a comma-separated list)")
        try:
            ssh_text, ssh_notes = draft_ssh_profile(name, hosts, discover_hosts(hosts))
        except (ClusterError, ValueError) as exc:
            raise UsageError(str(exc)) from None
        return Draft(ssh_text, ssh_notes)
    if backend != "kube":
        raise UsageError(f"acceptance init drafts profiles of backends kube, slurm and ssh, not {backend!r}")
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
