"""The run's verdict in pytest's terminal summary, before the report's own section.

The banner line leads (ACCEPTED green, NOT ACCEPTED red, PENDING yellow); then the causes the
failures share, one line per failure and per skip reason, what the cleanup left, the incident's
clocks and what became of a new handover baseline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from acceptance.report.causes import headline
from acceptance.report.data import ReportRecorder
from acceptance.report.decision import Banner, decide
from acceptance.report.statuses import PREFLIGHT_SKIP

if TYPE_CHECKING:
    from acceptance.conclusion import Conclusion
    from acceptance.criteria.context import RunContext

COLOURS = {Banner.ACCEPTED: "green", Banner.NOT_ACCEPTED: "red", Banner.PENDING: "yellow"}


def write_summary(
    terminal: Any,
    recorder: ReportRecorder,
    conclusion: Conclusion | None,
    context: RunContext,
    *,
    exitstatus: int,
    interrupted_by: str | None,
) -> None:
    """Write the verdict sections on pytest's terminal reporter (`conclusion`: None before the session finished)."""
    ended = dict(conclusion.ended) if conclusion is not None else {}
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        ended.setdefault("interrupted", interrupted_by or "KeyboardInterrupt")
    data = recorder.data({"mode": context.mode, **ended}, simulated=context.simulated)
    failures, skips = recorder.failures, recorder.skips
    if data.tests or failures or skips:
        decision = decide(data)
        terminal.section("acceptance verdicts")
        terminal.write_line(decision.line(), bold=True, **{COLOURS[decision.banner]: True})
    if failures or skips:
        for line in headline(data):
            terminal.write_line(f"CAUSE {line}", red=True, bold=True)
        for line in failures:
            terminal.write_line(f"FAILED {line}", red=True)
        for reason, count in skips.items():
            terminal.write_line(f"SKIPPED {count} item{'s' if count > 1 else ''}: {reason}", yellow=True)
        if any(reason.startswith(PREFLIGHT_SKIP) for reason in skips):
            terminal.write_line("NOT ACCEPTED: the cluster is unusable (see the preflight); the run fails", red=True)
    if conclusion is None:
        return
    for line in conclusion.cleanup_problems:
        terminal.write_line(f"CLEANUP {line}", red=True)
    if conclusion.incident is not None:
        terminal.section("incident")
        for line in conclusion.incident.lines:
            terminal.write_line(line, green=conclusion.incident.ok, red=not conclusion.incident.ok)
    if conclusion.baseline is not None:
        text, ok = conclusion.baseline
        terminal.section("handover baseline")
        terminal.write_line(text, green=ok, red=not ok)
