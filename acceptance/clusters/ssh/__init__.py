"""Bare metal, BYOS and instant clusters over SSH (paramiko); Open MPI ``mpirun`` from a head node.

`cluster` (the backend's `Cluster`), `hostset` (one kept connection per host: `connection`, host
keys via `hostkeys`, endpoints via `targets`), `workloads` (start and follow them), `remote` (the
shell sent to hosts: detached workloads under a run-id marker, waiting, killing, scanning),
`plans` (workload → host commands), `mpi` (hostfile, the launcher's ssh settings, mpirun argv,
launcher failures), `inventory`, `results`, `lease` (a run's lease file on the hosts it uses),
`janitor` (other runs' processes, live or left), `signals` (kernel Xid lines, node signals and
incident evidence from the hosts), and `simulated` (the same backend over the simulated hosts of
``--cluster=sim-ssh``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acceptance.clusters.ssh.cluster import SshCluster

__all__ = ["SshCluster"]


def __getattr__(name: str) -> object:
    # lazy: the profile imports `settings` of this package while it loads, before the backend can be imported
    if name == "SshCluster":
        from acceptance.clusters.ssh.cluster import SshCluster

        return SshCluster
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
