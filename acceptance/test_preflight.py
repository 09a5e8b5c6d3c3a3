"""Criterion 0: the cluster, node set and software versions are the ones of the agreement.

NCCL and DCGM versions are read from the tools' own output and compared by criteria 2 and 1.
"""

from __future__ import annotations

from acceptance.suite import Suite


def test_cluster_answers(acceptance: Suite) -> None:
    """The cluster answers with its version and nodes."""
    acceptance.check(acceptance.preflight("cluster"))


def test_node_set_ready(acceptance: Suite) -> None:
    """Every node of the agreement is present, Ready, not cordoned, with its GPUs allocatable."""
    acceptance.check(acceptance.preflight("nodes"))


def test_versions_as_agreed(acceptance: Suite) -> None:
    """Driver, CUDA, Kubernetes and the node spec equal the baseline's conditions."""
    acceptance.check(acceptance.preflight("versions"))


def test_no_leftover_objects(acceptance: Suite) -> None:
    """No object of an earlier run is still on the cluster."""
    acceptance.check(acceptance.preflight("leftovers"))
