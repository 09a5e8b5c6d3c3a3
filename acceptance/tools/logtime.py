"""Timestamps as log lines print them, read into naive datetimes (the caller says which zone).

Shapes (all seen in real captures):

- glog, PyTorch c10d: ``E1218 20:27:21.426415540`` (severity letter, date, 9-digit fraction, no year); c10's own
  logger prints the date as month x 100 + day WITHOUT zero padding (``E626`` is 26 June, ``E1206`` 6 December),
  the torch.distributed.elastic agent pads it (``W0608 19:04:45.351000``, 6-digit fraction): the last two digits
  are the day, the one or two before them the month;
- Python logging: ``2026-06-08 19:04:36,139`` and ``[2024-07-25 06:36:18,293]``;
- Megatron: ``[2026-11-23 09:12:03]``; torchrun summaries: ``2026-06-08_19:04:45``;
- dmesg -T: ``Sun Feb 23 16:24:18 2025``; dmesg --time-format iso: ``2025-01-21T04:41:44,283302+00:00``;
- syslog: ``May 19 07:08:57`` (no year); kubectl: ``Thu, 09 Apr 2020 02:18:55 -0400``.

Lines without a year get one from the caller (`year=`), usually inferred from a full date
elsewhere in the same text (`first_year`). Pure: no clock, no time zone database.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

MONTHS = {m: i + 1 for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
                                           "Nov", "Dec"))}  # fmt: skip
GLOG = re.compile(r"(?<![\w.])([IWEF])(\d{1,2})(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?")
ISO = re.compile(r"(\d{4})-(\d{2})-(\d{2})[T _](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?(?![\d:])")
CTIME = re.compile(r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (\w{3}) +(\d{1,2}) (\d{2}):(\d{2}):(\d{2}) (\d{4})\b")
SYSLOG = re.compile(r"^(\w{3}) +(\d{1,2}) (\d{2}):(\d{2}):(\d{2})\b")
RFC1123 = re.compile(r"\b\w{3}, (\d{2}) (\w{3}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) ([+-]\d{4})\b")
# Two searches, not one alternation: each starts with literal text the regex engine skips to quickly, so a
# megabyte log without a full date is scanned in milliseconds (the alternation took 70 ms a megabyte).
# (No look-behind either: it would defeat that; `_search` checks the character before a match.)
_ISO_YEAR = re.compile(r"(20\d{2})-(\d{2})-(\d{2})[T _]\d{2}:\d{2}")
_CTIME_YEAR = re.compile(r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2} +\d{1,2} \d{2}:\d{2}:\d{2} (20\d{2})(?!\w)")


def _search(pattern: re.Pattern[str], text: str, end: int) -> re.Match[str] | None:
    """The first match of `pattern` in ``text[:end]`` that does not start inside a word."""
    pos = 0
    while (match := pattern.search(text, pos, end)) is not None:
        if match.start() == 0 or not (text[match.start() - 1].isalnum() or text[match.start() - 1] == "_"):
            return match
        pos = match.start() + 1
    return None


def _fraction(text: str | None) -> int:
    return int((text or "0").ljust(6, "0")[:6])


def _zone(text: str | None) -> timezone | None:
    if not text:
        return None
    if text == "Z":
        return UTC
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    return timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:4])))


def _naive_utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


def first_year(text: str) -> int | None:
    """The year of the first full date in `text` (to date the year-less lines of the same log)."""
    iso = _search(_ISO_YEAR, text, len(text))
    ctime = _search(_CTIME_YEAR, text, iso.start() if iso else len(text))
    if ctime is not None:
        return int(ctime.group(1))
    return int(iso.group(1)) if iso is not None else None


def parse_iso(text: str) -> datetime | None:
    """The first ISO-like date-time in `text` (``2026-06-08 19:04:36,139``, ``...T...+00:00``, ``..._19:04:45``).

    A stated offset is applied (the result is naive UTC); without one the time is returned as written.
    """
    match = ISO.search(text)
    if not match:
        return None
    y, mo, d, h, mi, s = (int(match.group(i)) for i in range(1, 7))
    try:
        moment = datetime(y, mo, d, h, mi, s, _fraction(match.group(7)), tzinfo=_zone(match.group(8)))
    except ValueError:
        return None
    return _naive_utc(moment)


def parse_glog(text: str, year: int | None) -> datetime | None:
    """``E1218 20:27:21.426415540`` / ``E626 06:24:44.903881913`` with the year given; else None."""
    match = GLOG.search(text)
    if not match or year is None:
        return None
    try:
        return datetime(year, int(match.group(2)), int(match.group(3)), int(match.group(4)), int(match.group(5)),
                        int(match.group(6)), _fraction(match.group(7)))  # fmt: skip
    except ValueError:
        return None


def parse_ctime(text: str) -> datetime | None:
    """``Sun Feb 23 16:24:18 2025`` (dmesg -T)."""
    match = CTIME.search(text)
    if not match or match.group(1) not in MONTHS:
        return None
    try:
        return datetime(int(match.group(6)), MONTHS[match.group(1)], int(match.group(2)), int(match.group(3)),
                        int(match.group(4)), int(match.group(5)))  # fmt: skip
    except ValueError:
        return None


def parse_syslog(text: str, year: int | None) -> datetime | None:
    """``May 19 07:08:57`` at the start of `text`, with the year given."""
    match = SYSLOG.match(text)
    if not match or year is None or match.group(1) not in MONTHS:
        return None
    try:
        return datetime(year, MONTHS[match.group(1)], int(match.group(2)), int(match.group(3)), int(match.group(4)),
                        int(match.group(5)))  # fmt: skip
    except ValueError:
        return None


def parse_rfc1123(text: str) -> datetime | None:
    """``Thu, 09 Apr 2020 02:18:55 -0400`` (kubectl describe), as naive UTC."""
    match = RFC1123.search(text)
    if not match or match.group(2) not in MONTHS:
        return None
    try:
        moment = datetime(int(match.group(3)), MONTHS[match.group(2)], int(match.group(1)), int(match.group(4)),
                          int(match.group(5)), int(match.group(6)), tzinfo=_zone(match.group(7)))  # fmt: skip
    except ValueError:
        return None
    return _naive_utc(moment)
