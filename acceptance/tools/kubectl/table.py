"""kubectl's tabwriter tables.

Two paddings exist. Blanks (kubectl 1.10 and later): columns start where the header's names start
(names may hold one space, ``LAST SEEN``), cells are padded to the widest value of the whole output,
an empty cell is a run of blanks. TABs (kubectl 1.9 and before): cells end in a TAB run, often after a
blank (``False \\t``); there, cells are the pieces between TAB runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_AGE = re.compile(r"^(\S+)(?: \(x(\d+) over (\S+)\))?$")
_COLUMN = re.compile(r"\S+(?: \S+)*")
_TABS = re.compile(r" *\t+ *")
_CELL_GAP = re.compile(r"\S(?: {2,}|\t+)(?=\S)")
# a relative age as kubectl prints it: 8s, 9m43s, 115m, 5h43m, 21d, 3y42d, <unknown>, <invalid>
AGE = r"(?:<unknown>|<invalid>|\d+[smhdy](?:\d+[smhdy])*)"
AGGREGATED_AGE = AGE + r"(?: \(x\d+ over " + AGE + r"\))?"


@dataclass(frozen=True)
class Header:
    """A table's column names, with their start offsets in blank mode (None in TAB mode)."""

    names: tuple[str, ...]
    offsets: tuple[int, ...] | None
    line: str = ""

    def cells(self, row: str) -> dict[str, str] | None:
        """The row's cells by column name, None when they cannot be told apart.

        In TAB mode the cells are the pieces between TAB runs; where an empty cell makes the count differ
        from the header's, the cells are read at the header's columns on 8-wide tab stops (tabwriter's).
        """
        if self.offsets is None or "\t" in row:
            pieces = _TABS.split(row.strip())
            if len(pieces) == len(self.names):
                return dict(zip(self.names, pieces, strict=True))
            stops = columns(self.line.expandtabs(8))
            if self.offsets is not None or len(stops) != len(self.names):
                return None
            return split_row(row.expandtabs(8), stops)
        return split_row(row, list(zip(self.names, self.offsets, strict=True)))


def header(line: str) -> Header:
    if "\t" in line:
        return Header(tuple(_TABS.split(line.strip())), None, line)
    cols = columns(line)
    return Header(tuple(n for n, _ in cols), tuple(o for _, o in cols), line)


def tabular(line: str) -> bool:
    """The line looks like a table row: at least three cells apart by two blanks or a TAB."""
    return len(_CELL_GAP.findall(line.strip())) >= 2


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


def is_ruler(line: str) -> bool:
    """The dash row under a describe table's header (``----  ------``, with blanks or TABs)."""
    return bool(line.strip()) and set(line.strip()) <= {"-", " ", "\t"}


def age(text: str) -> tuple[str, int, str | None]:
    """``5m53s (x4 over 6m38s)`` → ("5m53s", 4, "6m38s"); ``38s`` → ("38s", 1, None)."""
    match = _AGE.match(text.strip())
    if not match:
        return text.strip(), 1, None
    return match.group(1), int(match.group(2) or 1), match.group(3)
