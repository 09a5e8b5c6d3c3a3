"""Criterion 1: the returned node passes DCGM diagnostics on every GPU.

All nodes' DCGM jobs are submitted together and run at the same time; each item awaits its own.
"""

from __future__ import annotations

from acceptance.suite import Suite


def test_dcgm_diagnostics(acceptance: Suite, dcgm_node: str) -> None:
    """Every GPU of the node passes every DCGM test that passed at handover."""
    acceptance.require_preflight()
    acceptance.check(acceptance.run.diagnostics.verdict(dcgm_node))
