"""Kubernetes with the Kubeflow MPI operator: MPIJobs for MPI workloads, batch/v1 Jobs per node."""

from acceptance.clusters.kube.cluster import KubeCluster
from acceptance.clusters.kube.settings import KubeSettings

__all__ = ["KubeCluster", "KubeSettings"]
