"""What a suite test item uses: its process's criteria, preflight gating, verdict → outcome."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from acceptance.criteria.context import RunContext
from acceptance.criteria.run import Criteria
from acceptance.judge.verdict import Status, Verdict
from acceptance.report.junit import record_verdict
from acceptance.report.statuses import PREFLIGHT_SKIP
from acceptance.run_session import AcceptanceSession


@dataclass(frozen=True)
class Suite:
    """The `acceptance` fixture: one per test item."""

    session: AcceptanceSession
    item: pytest.Item

    @property
    def run(self) -> Criteria:
        """The run's criteria; RunDeadline (the item errors, not judged) once the run's deadline has passed."""
        self.session.check_deadline()
        return self.session.run()

    @property
    def context(self) -> RunContext:
        return self.session.context

    def require_preflight(self) -> None:
        """Skip with the preflight's reason rather than fail misleadingly on a broken cluster."""
        blocking = self.run.preflight.blocking
        if blocking:
            pytest.skip(f"{PREFLIGHT_SKIP}{blocking}")

    def skip_if(self, reason: str | None) -> None:
        """Skip this item with `reason` (a criterion that does not apply to this run), if there is one."""
        if reason:
            pytest.skip(reason)

    def preflight(self, name: str) -> Verdict:
        """One of criterion 0's verdicts; a skip when the cluster did not answer at all."""
        verdicts = self.run.preflight.result().verdicts
        if name not in verdicts:
            pytest.skip(f"{PREFLIGHT_SKIP}{verdicts['cluster'].summary}")
        return verdicts[name]

    def check(self, verdict: Verdict) -> None:
        """Record every figure of the verdict on this item, then pass or fail with its one-line reason.

        PENDING (a verdict whose time has not come) is a skip with its summary as the reason; its
        junit property ``verdict`` says ``pending``. Every other status but PASS fails the item.
        """
        record_verdict(self.item, verdict)
        self.item.config.hook.pytest_acceptance_verdict(item=self.item, verdict=verdict)
        if verdict.status is Status.PENDING:
            pytest.skip(f"PENDING: {verdict.summary}")
        if not verdict.passed:
            pytest.fail(verdict.message(), pytrace=False)
