"""The two ends of an incident against its clocks: capacity restored (the acceptance run's pass)
and the incident resolved (criterion 5's pass, after probation).

Both take the bundle as its ``bundle.json`` document and the UTC time of the pass::

    from acceptance.incident import clocks
    result = clocks.resolution(bundle_doc, passed_at)      # criterion 5 closes the incident
    result.line()        # "incident INC-1234 resolved at ... UTC, 26h05m after the bundle; resolve clock 48h: met"
    result.properties()  # [("incident.resolved_utc", ...), ("incident.resolve_after_bundle_s", ...), ...]

`restoration` compares with the level's ``restore`` clock, `resolution` with its ``resolve`` clock
(``met`` is None when the profile stated no such clock for the level). The deadline is the one the
bundle states, counted in the agreed coverage hours when the bundle was made (its ``calendar``; 24x7,
plain wall-clock time, for a bundle that names none). Pure: no clock of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from acceptance.errors import ParseError
from acceptance.units import format_duration

WORDS = {"restore": "capacity restored", "resolve": "resolved"}


def _naive_utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


def parse_utc(text: str, what: str = "time") -> datetime:
    try:
        return _naive_utc(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except (TypeError, ValueError):
        raise ParseError("bundle.json", 0, str(text), f"an ISO UTC {what}") from None


@dataclass(frozen=True)
class ClockResult:
    clock: str  # "restore" | "resolve"
    ticket: str | None
    level: str | None
    at_utc: datetime
    bundle_utc: datetime
    target_s: float | None
    met: bool | None
    stated_deadline_utc: datetime | None = None  # the bundle's deadline, counted in its calendar
    calendar: str = "24x7"
    start_outside_coverage: bool = False

    @property
    def after_bundle_s(self) -> float:
        return (self.at_utc - self.bundle_utc).total_seconds()

    @property
    def deadline_utc(self) -> datetime | None:
        if self.target_s is None:
            return None
        return self.stated_deadline_utc or self.bundle_utc + timedelta(seconds=self.target_s)

    def calendar_words(self) -> str:
        """Nothing for 24x7 (plain wall-clock time), else the coverage hours the deadline was counted in."""
        if self.calendar == "24x7":
            return ""
        late = "; the bundle was made outside coverage" if self.start_outside_coverage else ""
        return f" in coverage hours {self.calendar}{late}"

    def line(self) -> str:
        ticket = f" {self.ticket}" if self.ticket else ""
        after = self.after_bundle_s
        when = f"{format_duration(abs(after))} {'after' if after >= 0 else 'BEFORE'} the bundle"
        deadline = self.deadline_utc
        if self.target_s is None or deadline is None:
            verdict = f"no {self.clock} clock stated for level {self.level or '(none proposed)'}"
        else:
            outcome = "met" if self.met else "MISSED"
            verdict = (
                f"{self.clock} clock {format_duration(self.target_s)}{self.calendar_words()} "
                f"(deadline {deadline:%Y-%m-%d %H:%M:%S} UTC): "
            )
            verdict += outcome
        return f"incident{ticket} {WORDS[self.clock]} at {self.at_utc:%Y-%m-%d %H:%M:%S} UTC, {when}; {verdict}"

    def properties(self, prefix: str = "incident") -> list[tuple[str, str]]:
        """junit-ready (name, value) pairs."""
        name = "restored" if self.clock == "restore" else "resolved"
        out = [
            (f"{prefix}.ticket", self.ticket or ""),
            (f"{prefix}.level", self.level or ""),
            (f"{prefix}.bundle_utc", self.bundle_utc.isoformat() + "Z"),
            (f"{prefix}.{name}_utc", self.at_utc.isoformat() + "Z"),
            (f"{prefix}.{self.clock}_after_bundle_s", f"{self.after_bundle_s:.0f}"),
        ]
        if self.target_s is not None and self.deadline_utc is not None:
            out += [
                (f"{prefix}.{self.clock}_clock_s", f"{self.target_s:.0f}"),
                (f"{prefix}.{self.clock}_deadline_utc", self.deadline_utc.isoformat() + "Z"),
                (f"{prefix}.{self.clock}_calendar", self.calendar),
                (f"{prefix}.{self.clock}_start_outside_coverage", "true" if self.start_outside_coverage else "false"),
                (f"{prefix}.{self.clock}_clock_met", "true" if self.met else "false"),
            ]
        return out


def _result(clock: str, bundle: Mapping[str, Any], passed_at: datetime) -> ClockResult:
    created = parse_utc(str(bundle.get("created_utc")), "creation time")
    severity = bundle.get("severity") or {}
    stated = next((c for c in severity.get("clocks") or () if c.get("name") == clock), None)
    target = float(stated["target_s"]) if stated is not None else None
    at = _naive_utc(passed_at)
    if stated is None or target is None:
        return ClockResult(clock, bundle.get("ticket"), severity.get("level"), at, created, None, None)
    calendar = str(stated.get("calendar") or "24x7")
    end = parse_utc(str(stated["deadline_utc"]), "deadline") if stated.get("deadline_utc") else None
    if end is None or calendar == "24x7":
        end = created + timedelta(seconds=target)  # plain wall-clock time, as it always was
    outside = bool(stated.get("start_outside_coverage"))
    return ClockResult(
        clock, bundle.get("ticket"), severity.get("level"), at, created, target, at <= end, end, calendar, outside
    )


def restoration(bundle: Mapping[str, Any], passed_at: datetime) -> ClockResult:
    """Capacity restored at `passed_at` (the acceptance run's pass), against the level's restore clock."""
    return _result("restore", bundle, passed_at)


def resolution(bundle: Mapping[str, Any], passed_at: datetime) -> ClockResult:
    """The incident resolved at `passed_at` (criterion 5's pass), against the level's resolve clock."""
    return _result("resolve", bundle, passed_at)
