"""An acceptance run of a ticket that has an incident bundle: capacity restored, against the restore clock.

At the end of a run with ``--ticket ID``, the newest bundle of that ticket under the reports folder
gives the bundle time and the severity's restore clock; a passing run restores capacity at its end
(`acceptance.incident.clocks.restoration`). The outcome goes to the junit suite properties
(``incident.*``) and the terminal summary. No bundle for the ticket: one line saying so, no failure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from acceptance.incident.clocks import restoration
from acceptance.report.history import bundle_for_ticket


@dataclass(frozen=True)
class IncidentOutcome:
    properties: tuple[tuple[str, str], ...]
    lines: tuple[str, ...]
    ok: bool


def restore_outcome(roots: Iterable[Path], ticket: str, passed: bool, at: datetime) -> IncidentOutcome:
    """What the run means for the ticket's incident (`at`: the run's end, UTC)."""
    searched = []
    for root in roots:
        searched.append(str(root))
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
            left = f"; restore deadline {deadline:%Y-%m-%d %H:%M:%S} UTC " + (
                f"in {seconds / 3600:.1f} h" if seconds >= 0 else f"passed {-seconds / 3600:.1f} h ago"
            )
        failed = [(name, value) for name, value in props if not name.startswith("incident.restored")]
        failed = [(n, v) for n, v in failed if "after_bundle" not in n and "clock_met" not in n]
        return IncidentOutcome(
            (*failed, ("incident.restored", "false")),
            (f"incident {ticket}: capacity NOT restored: this acceptance run did not pass{left}", f"bundle: {folder}"),
            False,
        )
    where = ", ".join(searched) or "(no reports folder)"
    return IncidentOutcome((("incident.bundle", ""),), (f"incident {ticket}: no bundle of this ticket under {where}",),
                           True)  # fmt: skip
