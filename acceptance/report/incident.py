"""An acceptance run of a ticket that has an incident bundle: capacity restored, against the restore clock
(criterion 5's run: the incident resolved when its probation passed, against the resolve clock).

At the end of a run with ``--ticket ID``, the newest bundle of that ticket under the reports folder
gives the bundle time and the severity's restore clock; a passing run restores capacity at its end
(`acceptance.incident.clocks.restoration`). The outcome goes to the junit suite properties
(``incident.*``) and the terminal summary. No bundle for the ticket: one line saying so, no failure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from acceptance.incident.clocks import resolution, restoration
from acceptance.report.history import bundle_for_ticket


@dataclass(frozen=True)
class IncidentOutcome:
    properties: tuple[tuple[str, str], ...]
    lines: tuple[str, ...]
    ok: bool


def _no_bundle(ticket: str, roots: Sequence[Path]) -> IncidentOutcome:
    """No bundle of the ticket under any of `roots`: one line saying so, no failure."""
    where = ", ".join(map(str, roots)) or "(no reports folder)"
    return IncidentOutcome(
        (("incident.bundle", ""),), (f"incident {ticket}: no bundle of this ticket under {where}",), True
    )


def restore_outcome(roots: Sequence[Path], ticket: str, passed: bool, at: datetime) -> IncidentOutcome:
    """What the run means for the ticket's incident (`at`: the run's end, UTC)."""
    for root in roots:
        found = bundle_for_ticket(root, ticket)
        if found is None:
            continue
        folder, doc = found
        result = restoration(doc, at)
        props = (("incident.bundle", str(folder)), *result.properties())
        if passed:
            return IncidentOutcome(props, (result.line(), f"bundle: {folder}"), result.met is not False)
        deadline = result.deadline_utc
        left = ""
        if deadline is not None:
            seconds = (deadline - result.at_utc).total_seconds()
            left = f"; restore deadline {deadline:%Y-%m-%d %H:%M:%S} UTC{result.calendar_words()} " + (
                f"in {seconds / 3600:.1f} h" if seconds >= 0 else f"passed {-seconds / 3600:.1f} h ago"
            )
        failed = [(name, value) for name, value in props if not name.startswith("incident.restored")]
        failed = [(n, v) for n, v in failed if "after_bundle" not in n and "clock_met" not in n]
        return IncidentOutcome(
            (*failed, ("incident.restored", "false")),
            (f"incident {ticket}: capacity NOT restored: this acceptance run did not pass{left}", f"bundle: {folder}"),
            False,
        )
    return _no_bundle(ticket, roots)


def resolve_outcome(roots: Sequence[Path], ticket: str, probation: Mapping[str, Any] | None) -> IncidentOutcome:
    """What a criterion 5 run means for the ticket's incident: resolved when its window passed, at the window's end.

    `probation` is criterion 5's verdict payload (None when its item did not judge). Never a
    restoration: a probation run does not restore capacity.
    """
    status = str((probation or {}).get("status", "not judged"))
    figures = (probation or {}).get("figures") or {}
    found = next((f for f in (bundle_for_ticket(r, ticket) for r in roots) if f is not None), None)
    if status != "pass":
        said = str((probation or {}).get("summary", ""))
        line = f"incident {ticket}: not resolved: probation {status}" + (f" ({said[:160]})" if said else "")
        bundle = (("incident.bundle", str(found[0])),) if found else ()
        return IncidentOutcome((*bundle, ("incident.resolved", "false")), (line,), status == "pending")
    if found is None:
        return _no_bundle(ticket, roots)
    folder, doc = found
    end = str(figures.get("window_end", "")).replace("Z", "+00:00")
    at = datetime.fromisoformat(end) if end else datetime.now().astimezone()
    result = resolution(doc, at)
    return IncidentOutcome(
        (("incident.bundle", str(folder)), *result.properties()),
        (result.line(), f"bundle: {folder}"),
        result.met is not False,
    )
