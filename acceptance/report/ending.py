"""How a pytest session ended, as the data the run's decision reads (`decision.decide`).

- ``interrupted``: the run was stopped from outside, by the signal's name (SIGINT, SIGTERM) or
  ``KeyboardInterrupt``; pytest's exit status is INTERRUPTED.
- ``stopped``: pytest stopped early on its own, with its reason (``-x`` / ``--maxfail``:
  "stopping after 1 failures"); the items after that point did not run.
- ``selected_criteria``: the criteria the run selected after ``-k``/``-m``/file deselection,
  so a criterion absent from the results is told apart as not selected or not reached. Absent
  where the process did not collect the items itself (the pytest-xdist controller).
"""

from __future__ import annotations

from typing import Any

import pytest

from acceptance.report.data import criterion_of


def session_end(session: pytest.Session, signal_name: str | None = None) -> dict[str, Any]:
    """What the decision must know of how `session` ended (call from `pytest_sessionfinish`)."""
    facts: dict[str, Any] = {}
    if signal_name or session.exitstatus == pytest.ExitCode.INTERRUPTED:
        facts["interrupted"] = signal_name or "KeyboardInterrupt"
    elif reason := session.shouldfail or session.shouldstop:
        facts["stopped"] = reason if isinstance(reason, str) else "pytest stopped the run early"
    selected = sorted({n for item in session.items if (n := criterion_of(item.nodeid)[0]) is not None})
    if selected:
        facts["selected_criteria"] = selected
    return facts
