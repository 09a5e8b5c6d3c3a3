"""What a profile's backend is, answered once: its title in reports, whether it is simulated, what it offers.

Every question "is this run simulated?" or "which backend is this?" outside this package is asked of
the `Backend` of the profile (`backend_of`), never of the profile's ``backend:`` word or its ``sim``
section. A backend over the simulator is one whose profile has a ``sim`` section (``sim``: the
Kubernetes backend against the emulator, always; ``ssh`` and ``slurm``: simulated hosts, a
simulated Slurm); a Kubernetes profile reaches a real API server whatever else it holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from acceptance.errors import UsageError

KNOWN = ("kube", "sim", "slurm", "ssh")


@dataclass(frozen=True)
class Backend:
    """The facts of one backend that the rest of the harness may ask."""

    name: str  # the profile's ``backend:``
    title: str  # in reports and documents: "Kubernetes", "SSH (bare metal)", "Slurm (simulated)" ...
    simulated: bool
    #: where this backend shows simulated faults (`acceptance.sim.model.faultspec.SHOWS`); none on a real cluster
    shows: frozenset[str] = frozenset()
    #: `acceptance bundle` reads the cluster itself (Kubernetes events, node conditions, the hosts' kernel logs)
    reads_incident: bool = False
    #: ``--ssh-insecure-accept-new`` applies (its connections check SSH host keys)
    checks_host_keys: bool = False
    #: its node names are Kubernetes node names (lower case); hosts and Slurm nodes keep their case
    kubernetes_nodes: bool = False

    def describe(self) -> str:
        return f"backend {self.name}" + (f" ({self.title})" if self.title != self.name else "")


_TOOLS = frozenset({"tools", "probation"})


class Profiled(Protocol):
    """What of a profile names its backend (`acceptance.profile.Profile`, which imports this module)."""

    @property
    def path(self) -> Path: ...
    @property
    def backend(self) -> str: ...
    @property
    def sim(self) -> object | None: ...


def backend_of(profile: Profiled) -> Backend:
    """The `Backend` of `profile` (a usage error naming the profile for a backend this harness does not know)."""
    backend = backend_named(profile.backend, sim_section=profile.sim is not None)
    if backend is None:
        raise UsageError(f"{profile.path}: unknown backend {profile.backend!r} (known: {', '.join(KNOWN)})")
    return backend


def backend_named(name: str, *, sim_section: bool) -> Backend | None:
    """The `Backend` a profile with ``backend: NAME`` (and a ``sim`` section, or not) gets; None if unknown."""
    if name == "sim":
        return Backend("sim", "Kubernetes (simulated)", True, _TOOLS, kubernetes_nodes=True)
    if name == "kube":
        return Backend("kube", "Kubernetes", False, reads_incident=True, kubernetes_nodes=True)
    if name == "ssh":
        if sim_section:
            return Backend("ssh", "SSH (bare metal, simulated)", True, _TOOLS | {"nvidia-smi"}, True, True)
        return Backend("ssh", "SSH (bare metal)", False, reads_incident=True, checks_host_keys=True)
    if name == "slurm":
        if sim_section:
            return Backend("slurm", "Slurm (simulated)", True, _TOOLS | {"slurm"}, True, checks_host_keys=True)
        return Backend("slurm", "Slurm", False, reads_incident=True, checks_host_keys=True)
    return None
