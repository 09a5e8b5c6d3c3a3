"""What a suite test item uses: the run's shared work, preflight gating, verdict → outcome."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from acceptance.judge.verdict import Verdict
from acceptance.report.session import record_verdict
from acceptance.runs import Runs
from acceptance.session import AcceptanceSession


@dataclass(frozen=True)
class Suite:
    """The `acceptance` fixture: one per test item."""

    session: AcceptanceSession
    item: pytest.Item

    @property
    def runs(self) -> Runs:
        return self.session.runs()

    def require_preflight(self) -> None:
        """Skip with the preflight's reason rather than fail misleadingly on a broken cluster."""
        blocking = self.runs.preflight().blocking
        if blocking:
            pytest.skip(f"preflight failed: {blocking}")

    def check(self, verdict: Verdict) -> None:
        """Record every figure of the verdict on this item, then pass or fail with its one-line reason."""
        record_verdict(self.item, verdict)
        if not verdict.passed:
            pytest.fail(verdict.message(), pytrace=False)
