"""kubectl's tabwriter tables: columns start where the header's names start (names may hold one space)."""

from __future__ import annotations

import re

_AGE = re.compile(r"^(\S+)(?: \(x(\d+) over (\S+)\))?$")
_COLUMN = re.compile(r"\S+(?: \S+)*")


def columns(header: str) -> list[tuple[str, int]]:
    """(name, start offset) of each column; names are separated by two or more spaces."""
    return [(m.group(0), m.start()) for m in _COLUMN.finditer(header) if _gap_before(header, m.start())]


def _gap_before(header: str, start: int) -> bool:
    return start == 0 or header[max(0, start - 2) : start] == "  " or header[:start].strip() == ""


def split_row(row: str, cols: list[tuple[str, int]]) -> dict[str, str]:
    """The row's cells by column name; the last column takes the rest of the line."""
    out: dict[str, str] = {}
    for i, (name, start) in enumerate(cols):
        end = cols[i + 1][1] if i + 1 < len(cols) else None
        out[name] = (row[start:end] if end is not None else row[start:]).strip()
    return out


def age(text: str) -> tuple[str, int, str | None]:
    """``5m53s (x4 over 6m38s)`` → ("5m53s", 4, "6m38s"); ``38s`` → ("38s", 1, None)."""
    match = _AGE.match(text.strip())
    if not match:
        return text.strip(), 1, None
    return match.group(1), int(match.group(2) or 1), match.group(3)
