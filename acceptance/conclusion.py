"""How the controller concludes a run at session end, before pytest writes the junit file.

In this order: every cluster object of the run is deleted (what could not be is named in the
report), how the session ended is noted, the exit status follows the run's policy (an unusable
cluster fails the run even when the preflight's own items were deselected), a ``--ticket`` run is
set against the ticket's incident bundle, and a ``--record-baseline`` run writes and signs the new
handover baseline (a refused or, with ``--sign-key``, unsigned baseline fails the run).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from acceptance import criteria
from acceptance.baseline_trust import sign_baseline
from acceptance.errors import AcceptanceError
from acceptance.report.ending import session_end
from acceptance.report.junit import add_suite_properties
from acceptance.report.statuses import PREFLIGHT_SKIP

if TYPE_CHECKING:
    from acceptance.report.data import ReportRecorder
    from acceptance.report.incident import IncidentOutcome
    from acceptance.report.reporting_plugin import ReportingPlugin
    from acceptance.run_session import AcceptanceSession


@dataclass(frozen=True)
class Conclusion:
    """What the end of the run did, for the terminal summary."""

    ended: Mapping[str, Any] = field(default_factory=dict)  # how the session ended (report/ending.py)
    cleanup_problems: tuple[str, ...] = ()  # what the run's cleanup could not delete
    incident: IncidentOutcome | None = None
    baseline: tuple[str, bool] | None = None  # the new handover baseline: what became of it, and whether that is fine


def conclude(run: AcceptanceSession, session: pytest.Session, reporting: ReportingPlugin) -> Conclusion:
    """Conclude the run on the controller (from a tryfirst `pytest_sessionfinish`); may set `session.exitstatus`.

    `reporting` is the controller's report, whose recorder holds every item's outcome.
    """
    # delete everything first (within the cleanup's deadline), then the report says what had finished and
    # what was left; after the summary nothing waits on the cluster
    recorder = reporting.recorder
    problems = tuple(run.close_cluster_work())
    reporting.note_problems(problems)
    ended = session_end(session, run.interrupted_by)
    if session.exitstatus == pytest.ExitCode.INTERRUPTED:
        return Conclusion(ended, problems)
    unusable = sum(n for reason, n in recorder.skips.items() if reason.startswith(PREFLIGHT_SKIP))
    if unusable and session.exitstatus == 0:
        # the preflight's own items may be deselected (-k fabric): an unusable cluster still fails the run
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    ran = session.testscollected > 0 and not run.config.option.collectonly
    incident = _incident(run, session, recorder) if ran else None
    baseline = _record(run, session, recorder) if ran and run.recording else None
    return Conclusion(ended, problems, incident, baseline)


def _incident(run: AcceptanceSession, session: pytest.Session, recorder: ReportRecorder) -> IncidentOutcome | None:
    """--ticket with an incident bundle: capacity restored (this run's pass) against the restore clock."""
    passed = session.exitstatus == 0 and session.testsfailed == 0
    probation = recorder.latest_call_verdict(criteria.modules_of("probation"))  # criterion 5's verdict payload
    incident = run.incident(passed, datetime.now(UTC), probation)
    if incident is not None:
        add_suite_properties(run.config, dict(incident.properties))
    return incident


def _record(run: AcceptanceSession, session: pytest.Session, recorder: ReportRecorder) -> tuple[str, bool]:
    """Write and sign the new handover baseline; a refusal, or no signature though --sign-key asked, fails the run."""
    try:
        path = run.record(recorder.failures)
        signed = sign_baseline(path, run.sign)
        if signed.signed:
            message = (f"new handover baseline recorded and signed ({signed.describe()}): {path}", True)
        else:
            message = (
                f"new handover baseline recorded UNSIGNED ({signed.describe()}): {path}; later runs refuse it "
                "unless --allow-unsigned-baseline; sign it with `ssh-keygen -Y sign -n recovery-acceptance -f KEY "
                "FILE`",
                False,
            )
            if run.sign.key is not None and session.exitstatus == 0:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if run.report_folder is not None:
            run.report_folder.add_file("baseline.json", path)
    except AcceptanceError as exc:
        message = (str(exc), False)
        if session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    return message
