"""The agreed coverage hours, and deadlines counted only in covered time.

A profile states when the provider's clocks run (top-level ``coverage:``)::

    coverage: 24x7                                   # the default when absent: plain wall-clock time
    coverage:
      hours: "Mon-Fri 08:00-18:00"
      tz: Europe/Berlin
      holidays: [2026-12-25, 2026-12-26]

`deadline(start, duration, coverage)` counts `duration` of covered time from `start`: a 4 h clock
started on Friday 17:00 Europe/Berlin under Mon-Fri 08:00-18:00 has 1 h on Friday and ends on Monday
at 11:00. Each covered day's local opening and closing are converted to UTC for that day through
`zoneinfo` (the ``tzdata`` package supplies the database where the system has none), so the
daylight-saving changes move the UTC hours with the local ones. Pure: no clock of its own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from acceptance.errors import ProfileError

DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
ALWAYS = "24x7"
HOURS_FORM = '"Mon-Fri 08:00-18:00" (days as a range or a comma list of Mon..Sun, then HH:MM-HH:MM local time)'
FORM = (
    f"{ALWAYS!r}, or a mapping {{hours: {HOURS_FORM}, tz: an IANA time zone such as Europe/Berlin, "
    "holidays: [YYYY-MM-DD, ...]}"
)
# No agreed calendar leaves a clock without covered time for longer than this: a search past it is a bad profile.
MAX_SEARCH_DAYS = 3700

_HOURS = re.compile(r"\s*(?P<days>[A-Za-z,\- ]+?)\s+(?P<start>\d{1,2}:\d{2})\s*-\s*(?P<end>\d{1,2}:\d{2})\s*")


class CoverageError(ValueError):
    """A ``coverage:`` value not of the expected form: where (the key path), what was found, what was expected."""

    def __init__(self, where: tuple[str | int, ...], found: str, expected: str) -> None:
        super().__init__(f"coverage{''.join(f'.{w}' if isinstance(w, str) else f'[{w}]' for w in where)}: "
                         f"found {found}, expected {expected}")  # fmt: skip
        self.where = ("coverage", *where)
        self.found = found
        self.expected = expected


@dataclass(frozen=True)
class Coverage:
    """When the clocks run. `days` None: always (24x7)."""

    days: tuple[int, ...] | None = None  # weekday numbers, Monday 0
    start: time = time(0)
    end_minutes: int = 24 * 60  # local closing, minutes after midnight (24:00 allowed)
    tz: str = "UTC"
    holidays: tuple[date, ...] = ()
    hours_text: str = ALWAYS

    @property
    def always(self) -> bool:
        return self.days is None

    def describe(self) -> str:
        """The calendar in words: ``24x7`` or ``Mon-Fri 08:00-18:00 Europe/Berlin, 2 holidays``."""
        if self.always:
            return ALWAYS
        said = f"{self.hours_text} {self.tz}"
        if self.holidays:
            said += f", {len(self.holidays)} holiday{'s' if len(self.holidays) != 1 else ''}"
        return said

    def intervals(self, day: date) -> tuple[datetime, datetime] | None:
        """The covered UTC interval of local `day` (aware datetimes), None when the day is not covered."""
        if self.days is None:
            raise ValueError("a 24x7 coverage has no daily intervals")
        if day.weekday() not in self.days or day in self.holidays:
            return None
        zone = ZoneInfo(self.tz)
        opens = datetime.combine(day, self.start, zone).astimezone(UTC)
        if self.end_minutes == 24 * 60:
            closes_local = datetime.combine(day + timedelta(days=1), time(0), zone)
        else:
            closes_local = datetime.combine(day, time(self.end_minutes // 60, self.end_minutes % 60), zone)
        return opens, closes_local.astimezone(UTC)


@dataclass(frozen=True)
class Deadline:
    """A clock's end: the UTC instant, the calendar it was counted in, and whether it started outside coverage."""

    at_utc: datetime
    calendar: str
    start_outside_coverage: bool = False
    counted_from_utc: datetime | None = None  # the first covered instant at or after the start

    def words(self) -> str:
        """What a line adds after the deadline: nothing for 24x7, else the calendar (and the late start)."""
        if self.calendar == ALWAYS:
            return ""
        said = f" (in coverage hours {self.calendar}"
        if self.start_outside_coverage and self.counted_from_utc is not None:
            said += f"; started outside coverage, counted from {self.counted_from_utc:%Y-%m-%d %H:%M} UTC"
        return said + ")"


def _aware(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _like(moment: datetime, template: datetime) -> datetime:
    """`moment` (aware UTC) in the style of `template`: naive UTC for a naive template."""
    return moment.replace(tzinfo=None) if template.tzinfo is None else moment


def deadline(start: datetime, duration_s: float, coverage: Coverage) -> Deadline:
    """`duration_s` of covered time from `start` (naive datetimes are UTC; the result keeps the style)."""
    if coverage.always:
        return Deadline(start + timedelta(seconds=duration_s), ALWAYS, False, start)
    cursor = _aware(start)
    remaining = timedelta(seconds=max(0.0, duration_s))
    day = cursor.astimezone(ZoneInfo(coverage.tz)).date() - timedelta(days=1)
    first: datetime | None = None
    for _ in range(MAX_SEARCH_DAYS):
        span = coverage.intervals(day)
        day += timedelta(days=1)
        if span is None or span[1] <= cursor:
            continue
        begin = max(span[0], cursor)
        if first is None:
            first = begin
        if remaining <= span[1] - begin:
            outside = first > _aware(start)
            return Deadline(_like(begin + remaining, start), coverage.describe(), outside, _like(first, start))
        remaining -= span[1] - begin
        cursor = span[1]
    raise ProfileError(
        f"coverage {coverage.describe()}: a clock of {duration_s / 3600:g} h started {start} does not end within "
        f"{MAX_SEARCH_DAYS} days of covered time; widen the coverage hours or shorten the clock"
    )


def _minutes(text: str, where: tuple[str | int, ...], value: str) -> int:
    hours, minutes = (int(p) for p in text.split(":"))
    if minutes > 59 or hours > 24 or (hours == 24 and minutes):
        raise CoverageError(where, repr(value), f"a time of day HH:MM (00:00..24:00) in {HOURS_FORM}")
    return hours * 60 + minutes


def _days(text: str, where: tuple[str | int, ...], value: str) -> tuple[int, ...]:
    names = {d.lower(): i for i, d in enumerate(DAYS)}
    found: list[int] = []
    for part in text.replace(" ", "").split(","):
        ends = part.split("-")
        if not part or len(ends) > 2 or any(e.lower()[:3] not in names or len(e) < 3 for e in ends):
            raise CoverageError(where, repr(value), HOURS_FORM)
        first, last = names[ends[0].lower()[:3]], names[ends[-1].lower()[:3]]
        span = range(first, last + 1) if first <= last else [*range(first, 7), *range(0, last + 1)]
        found += [d for d in span if d not in found]
    return tuple(sorted(found))


def _holiday(value: Any, where: tuple[str | int, ...]) -> date:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value))
    except ValueError:
        raise CoverageError(where, repr(value), "a date YYYY-MM-DD") from None


def parse(raw: Any) -> Coverage:
    """The profile's ``coverage:`` value (None: absent, i.e. 24x7). Raises `CoverageError` naming the key."""
    if raw is None or (isinstance(raw, str) and raw.strip().lower() == ALWAYS):
        return Coverage()
    if not isinstance(raw, Mapping):
        raise CoverageError((), repr(raw), FORM)
    unknown = sorted(str(k) for k in set(raw) - {"hours", "tz", "holidays"})
    if unknown:
        raise CoverageError((str(unknown[0]),), "an unknown key", "hours, tz and holidays")
    hours = raw.get("hours")
    if not isinstance(hours, str):
        raise CoverageError(("hours",), repr(hours), HOURS_FORM)
    if hours.strip().lower() == ALWAYS:
        return Coverage()
    match = _HOURS.fullmatch(hours)
    if match is None:
        raise CoverageError(("hours",), repr(hours), HOURS_FORM)
    days = _days(match["days"], ("hours",), hours)
    opens = _minutes(match["start"], ("hours",), hours)
    closes = _minutes(match["end"], ("hours",), hours)
    if closes <= opens:
        raise CoverageError(("hours",), repr(hours), "a closing time after the opening time on the same day")
    tz = raw.get("tz")
    if not isinstance(tz, str) or not tz.strip():
        raise CoverageError(("tz",), repr(tz), "an IANA time zone such as Europe/Berlin (hours are local to it)")
    known = "an IANA time zone known to the tz database, such as Europe/Berlin"
    if tz not in available_timezones():
        raise CoverageError(("tz",), repr(tz[:80]), known)
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise CoverageError(("tz",), repr(tz[:80]), known) from None
    listed = raw.get("holidays") or []
    if not isinstance(listed, list):
        raise CoverageError(("holidays",), repr(listed), "a list of dates YYYY-MM-DD")
    holidays = tuple(sorted({_holiday(h, ("holidays", i)) for i, h in enumerate(listed)}))
    return Coverage(days, time(opens // 60, opens % 60), closes, tz, holidays, " ".join(hours.split()))
