"""Criterion 3: a smoke run of the real job shows step time within the agreed margin of the baseline.

Judged against the job's own run-to-run variation: the ratio of medians with a block-bootstrap
confidence interval; PASS, FAIL, or INCONCLUSIVE with the steps that would decide.
"""

from __future__ import annotations

from acceptance.suite import Suite


def test_smoke_step_time(acceptance: Suite) -> None:
    """Median step time of the smoke run is within the margin of the handover sample."""
    acceptance.require_preflight()
    acceptance.check(acceptance.run.smoke.verdict())
