"""Criterion 2: nccl-tests across the full node set match the handover baseline within the margin.

The command comes from the baseline, not from today's profile, so a changed profile cannot
silently change what is compared.
"""

from __future__ import annotations

from acceptance.suite import Suite


def test_nccl_busbw(acceptance: Suite, nccl_test: str) -> None:
    """Out-of-place busbw at every size >= the agreed minimum is within the margin of the baseline."""
    acceptance.require_preflight()
    acceptance.check(acceptance.run.fabric.verdict(nccl_test))
