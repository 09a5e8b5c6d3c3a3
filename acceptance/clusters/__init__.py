"""Where workloads run. `open(profile, run_id)` gives the profile's backend as a `Cluster`.

Nothing outside this package names a backend class or asks whether a run is simulated: `backend_of`
answers that once, from the profile. A backend the profile names but this
harness cannot honour stops the run with a usage error; it never falls back to another.
Backends: ``kube``, ``sim`` (kube against the emulator), ``ssh`` (with a ``sim`` section: the
SSH backend against simulated hosts behind a real sshd, ``--cluster=sim-ssh``), ``slurm`` (with a ``sim``
section: a real Slurm on loopback, ``--cluster=sim-slurm``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from acceptance.clusters.backends import Backend, backend_of
from acceptance.clusters.base import Cluster
from acceptance.errors import ClusterError, UsageError

if TYPE_CHECKING:
    from acceptance.clusters.slurm.draft import SlurmAccess
    from acceptance.clusters.ssh.draft import HostAccess
    from acceptance.profile import Profile
    from acceptance.sim.model.faultspec import SimFaults as SimFaults

__all__ = ["Backend", "Cluster", "Draft", "backend_of", "draft_profile", "open", "parse_faults", "simulated_job_series"]


@dataclass(frozen=True)
class Draft:
    """A profile drafted from a live cluster: its text, and what could not be found (with what to do)."""

    text: str
    notes: tuple[str, ...]


def parse_faults(texts: Sequence[str]) -> SimFaults:
    """``--sim-fault`` values, parsed once into the simulator's fault objects (a usage error for a bad spec,
    naming it and the form expected); which backend shows them is `open`'s question."""
    from acceptance.sim.model.faultspec import SimFaults as SimFaults

    return SimFaults.parse(texts)


def simulated_job_series(profile: Profile) -> dict[str, str]:
    """The job's series (``step_time``, ``progress`` queries) in the probation a simulated backend serves
    (`acceptance.clusters.base.SimulatesProbation`); empty for a real cluster."""
    if not backend_of(profile).simulated:
        return {}
    from acceptance.sim.probation import PROGRESS, STEP_TIME

    return {"step_time": STEP_TIME, "progress": PROGRESS}


def open(
    profile: Profile,
    run_id: str,
    *,
    faults: SimFaults | None = None,
    attach: Mapping[str, str] | None = None,
    ssh_accept_new: bool = False,
) -> Cluster:
    """The profile's backend for run `run_id`.

    `attach` is another process's `Cluster.attach_info()`: join that run's cluster (an
    xdist worker joins the controller's) instead of starting one. `faults` (`parse_faults`) are
    simulator faults, refused by every backend but a simulated one, and each by a simulated backend
    that cannot show it. `ssh_accept_new` accepts unknown SSH host keys (``--ssh-insecure-accept-new``).
    """
    backend = backend_of(profile)
    if faults:
        _refuse_unshown(profile, backend, faults)
    if ssh_accept_new and not backend.checks_host_keys:
        raise UsageError(f"--ssh-insecure-accept-new applies to SSH clusters; {profile.name} uses {profile.backend}")
    try:
        if backend.simulated:
            return _simulated(profile, run_id, faults, attach, ssh_accept_new)
        if profile.backend == "kube":
            from acceptance.clusters.kube import KubeCluster

            return KubeCluster.from_profile(profile, run_id)
        if profile.backend == "slurm":
            from acceptance.clusters.slurm import SlurmCluster
            from acceptance.clusters.slurm.transport import LocalTransport, LoginTransport
            from acceptance.profile import SlurmSettings

            slurm = profile.slurm or SlurmSettings()
            transport = LoginTransport(slurm.login, accept_new=ssh_accept_new) if slurm.login else LocalTransport()
            return SlurmCluster(profile, run_id, transport, slurm)
        from acceptance.clusters.ssh import SshCluster

        accept_new = bool(attach.get("accept_new")) if attach is not None else ssh_accept_new
        return SshCluster(profile, run_id, accept_new=accept_new)
    except ClusterError as exc:  # credentials that do not load, an emulator or sshd that does not start
        raise UsageError(f"{profile.path}: backend {profile.backend}: {exc}") from None


def _simulated(
    profile: Profile, run_id: str, faults: SimFaults | None, attach: Mapping[str, str] | None, accept_new: bool
) -> Cluster:
    from acceptance.sim.model.faultspec import SimFaults as SimFaults

    given = faults if faults is not None else SimFaults()
    if profile.backend == "sim":
        from acceptance.clusters.sim import EmbeddedSimCluster

        if attach is not None:
            return EmbeddedSimCluster.attach(profile, run_id, attach)
        return EmbeddedSimCluster.start(profile, run_id, given)
    if profile.backend == "ssh":
        from acceptance.clusters.ssh.simulated import SimulatedSshCluster

        if attach is not None:
            return SimulatedSshCluster.attach(profile, run_id, attach)
        return SimulatedSshCluster.start(profile, run_id, given, accept_new=accept_new)
    from acceptance.clusters.slurm.simulated import SimulatedSlurmCluster

    if attach is not None:
        return SimulatedSlurmCluster.attach(profile, run_id, attach)
    return SimulatedSlurmCluster.start(profile, run_id, given)


def _refuse_unshown(profile: Profile, backend: Backend, faults: SimFaults) -> None:
    """A fault the backend cannot show is refused before anything starts, with the kind's hint."""
    if not backend.simulated:
        raise UsageError(f"--sim-fault needs a simulated cluster; {profile.name} uses {backend.describe()}")
    for fault, kind in faults.refused(backend.shows):
        hint = f"; {kind.hint}" if kind.hint else ""
        raise UsageError(f"--sim-fault {fault}: {profile.name} ({backend.title}) cannot show {kind.name}{hint}")


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
        return _drafted(lambda: draft_slurm_profile(name, slurm, discover_slurm(slurm)))
    if backend == "ssh":
        from acceptance.clusters.ssh.draft import discover_hosts, draft_ssh_profile

        if hosts is None or not hosts.hosts:
            raise UsageError("acceptance init over SSH needs the hosts (--hosts FILE or a comma-separated list)")
        return _drafted(lambda: draft_ssh_profile(name, hosts, discover_hosts(hosts)))
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


def _drafted(draft: Callable[[], tuple[str, tuple[str, ...]]]) -> Draft:
    """The draft of a backend that reads its nodes through the preflight's inventory (SSH hosts, a Slurm
    partition); what it cannot read or make sense of is a usage error in its own words."""
    try:
        text, notes = draft()
    except (ClusterError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    return Draft(text, notes)
