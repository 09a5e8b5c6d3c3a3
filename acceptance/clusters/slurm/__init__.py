"""Slurm: the scheduler's own commands (sbatch, srun, squeue, scancel, scontrol), here or on a login node.

`commands` (pure: workload → sbatch argv and batch script, job names and run ids, ``--time``),
`transport` (a local shell, or the login node over the SSH backend's connection), `cluster` (the
backend's `Cluster`), and `simulated` (the same backend over the real Slurm of ``--cluster=sim-slurm``).
"""

from acceptance.clusters.slurm.cluster import SlurmCluster

__all__ = ["SlurmCluster"]
