"""Events tables of every kubectl generation, and event rows pasted without their header.

With a header (the columns are found by name, so their order and set may vary):

* ``Type  Reason  Age  From  Message`` (``describe``), ``FirstSeen LastSeen Count From SubObjectPath
  Type Reason Message`` (``describe``, kubectl 1.9 and before, TAB padded);
* ``[NAMESPACE] LAST SEEN TYPE REASON OBJECT MESSAGE`` (``get events`` since 1.14, ``kubectl events``),
  ``-o wide`` adding ``SUBOBJECT SOURCE … FIRST SEEN COUNT NAME`` after MESSAGE;
* ``LASTSEEN FIRSTSEEN COUNT NAME KIND SUBOBJECT TYPE REASON SOURCE MESSAGE`` (1.x) and
  ``FIRSTSEEN LASTSEEN COUNT NAME KIND SUBOBJECT REASON SOURCE MESSAGE`` (before 1.0, absolute times).

Without a header, two row shapes are read: ``<Normal|Warning>  <Reason>  <age>  <from>  <message>``
(a describe Events row) and ``[<namespace>]  <age>  <Normal|Warning>  <Reason>  <kind>/<name>  <message>``
(a ``get events`` row); anything else is not taken for an event, nor is a ``-o wide`` row without its
header (SUBOBJECT and SOURCE cannot be told from the message there).
"""

from __future__ import annotations

import re
from datetime import datetime

from acceptance.tools import logtime
from acceptance.tools.kubectl.model import Event
from acceptance.tools.kubectl.table import AGE, AGGREGATED_AGE, Header, age, header, is_ruler, tabular

_SEP = r"(?: *\t[\t ]*| {2,})"
_DESCRIBE_ROW = re.compile(
    rf"^\s*(?P<type>Normal|Warning){_SEP}(?P<reason>[A-Za-z]\S*){_SEP}(?P<age>{AGGREGATED_AGE}){_SEP}"
    rf"(?P<source>\S(?:.*?\S)?){_SEP}(?P<message>\S.*)$"
)
_GET_ROW = re.compile(
    rf"^(?:(?P<namespace>[a-z0-9][-a-z0-9]*){_SEP})?(?P<age>{AGGREGATED_AGE}){_SEP}(?P<type>Normal|Warning){_SEP}"
    rf"(?P<reason>[A-Za-z]\S*){_SEP}(?P<object>[A-Za-z][\w.]*/\S+){_SEP}(?P<message>\S.*)$"
)
# the tail of a ``get events -o wide`` row: FIRST SEEN, COUNT, NAME after the message
_WIDE_TAIL = re.compile(rf"{_SEP}{AGE}{_SEP}\d+{_SEP}\S+$")
_AGE_CELL = re.compile(rf"^{AGGREGATED_AGE}$")
_FIRST_AGE = re.compile(rf"^{AGE}$")
_ZERO_TIME = re.compile(r"\b0001 00:00:00\b")


def _key(name: str) -> str:
    return name.upper().replace(" ", "").replace("_", "")


def is_header(line: str) -> bool:
    if not ("REASON" in line or "Reason" in line) or not ("MESSAGE" in line or "Message" in line):
        return False
    keys = {_key(n) for n in header(line).names}
    return {"REASON", "MESSAGE"} <= keys and bool(keys & {"LASTSEEN", "AGE", "FIRSTSEEN"})


def absolute(cell: str) -> datetime | None:
    """An RFC 1123 time as kubectl prints it, as naive UTC; the zero time (``01 Jan 0001``) is None (never)."""
    if _ZERO_TIME.search(cell):
        return None
    try:
        return logtime.parse_rfc1123(cell)
    except OverflowError:
        return None


def _event(head: Header, cells: dict[str, str], number: int) -> Event | None:
    by = {_key(n): cells.get(n, "") for n in head.names}
    kind = by.get("TYPE", "")
    reason = by.get("REASON", "")
    if kind not in ("Normal", "Warning", "") or (not kind and "TYPE" in by) or not reason or " " in reason:
        return None
    if not cells.get(head.names[-1]):
        return None  # the row stops before its last column: cut by the paste
    seen = by.get("LASTSEEN", by.get("AGE", ""))
    first = by.get("FIRSTSEEN")
    last_utc = first_utc = None
    if _AGE_CELL.match(seen):
        last, count, over = age(seen)
    elif (last_utc := absolute(seen)) is not None:
        last, count, over = "", 1, None
    else:
        return None
    if first is not None and not _FIRST_AGE.match(first):
        first_utc, first = absolute(first), None
    if by.get("COUNT", "").isdigit():
        count = int(by["COUNT"])
    obj = by.get("OBJECT") or (f"{by['KIND']}/{by['NAME']}" if by.get("KIND") and by.get("NAME") else "")
    return Event(type=kind, reason=reason, message=by.get("MESSAGE", ""), last_seen=last, count=count, over=over,
                 source=by.get("SOURCE", by.get("FROM", "")), object=obj, line=number,
                 namespace=by.get("NAMESPACE", ""), first_seen=first or None, last_seen_utc=last_utc,
                 first_seen_utc=first_utc)  # fmt: skip


def table(lines: list[tuple[int, str]], start: int) -> tuple[list[Event], int, list[int]]:
    """Rows of the events table whose header line is ``lines[start]``: the events, the next index, and the
    line that ended the table when it looks like a row that could not be read (cut short, shifted cells).

    The table ends at an empty line or at the first line that is no event row of this header.
    """
    head = header(lines[start][1])
    i = start + 1
    if i < len(lines) and is_ruler(lines[i][1]):
        i += 1
    out: list[Event] = []
    while i < len(lines):
        number, row = lines[i]
        cells = head.cells(row) if row.strip() else None
        found = _event(head, cells, number) if cells is not None else None
        if found is None:
            unread = [number] if row.strip() and tabular(row) and not is_header(row) else []
            return out, i, unread
        out.append(found)
        i += 1
    return out, i, []


def row(number: int, line: str) -> Event | None:
    """An event row pasted without its header (one of the two shapes in the module's docstring), or None."""
    if "Normal" not in line and "Warning" not in line:
        return None
    match = _DESCRIBE_ROW.match(line)
    if match:
        last, count, over = age(match.group("age"))
        return Event(type=match.group("type"), reason=match.group("reason"), message=match.group("message"),
                     last_seen=last, count=count, over=over, source=match.group("source"), line=number)  # fmt: skip
    match = _GET_ROW.match(line)
    if match and not _WIDE_TAIL.search(match.group("message")):
        last, count, over = age(match.group("age"))
        return Event(type=match.group("type"), reason=match.group("reason"), message=match.group("message"),
                     last_seen=last, count=count, over=over, object=match.group("object"), line=number,
                     namespace=match.group("namespace") or "")  # fmt: skip
    return None
