"""Bare metal, BYOS and instant clusters over SSH (paramiko); Open MPI ``mpirun`` from a head node.

`cluster` (the backend), `connection` (one connection per host, host keys via `hostkeys`,
endpoints via `targets`), `remote` (the shell sent to hosts: detached workloads under a run-id
marker, waiting, killing, scanning), `plans` (workload → host commands), `mpi` (hostfile,
launcher ssh settings, mpirun argv, launcher failures), `inventory`, `results`, `janitor`,
and `simulated` (the same backend over the simulated hosts of ``--cluster=sim-ssh``).
"""

from acceptance.clusters.ssh.cluster import SshCluster

__all__ = ["SshCluster"]
