"""dcgm-exporter's counters file (``etc/default-counters.csv``): which DCGM fields it exports.

Lines are ``DCGM_FIELD, <prometheus type>, <help text>`` with irregular blanks around the
commas; ``#`` starts a comment and is also how a field is switched off, so a commented line
that still has the three columns is a field that is *off*. A ``label`` field is not a series:
its value becomes a label of every series.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from acceptance.errors import ParseError

_FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
COUNTER_TYPES = frozenset({"gauge", "counter", "label", "histogram", "summary"})


@dataclass(frozen=True)
class CounterField:
    """One field of the counters file: the exported name, its type, help text, and whether it is on."""

    field: str
    type: str
    help: str
    enabled: bool
    line: int


def _split(text: str) -> list[str] | None:
    parts = [p.strip() for p in text.split(",", 2)]
    if len(parts) != 3 or not _FIELD.match(parts[0]) or parts[1] not in COUNTER_TYPES:
        return None
    return parts


def parse_counters(text: str, source: str = "<counters>") -> tuple[CounterField, ...]:
    """Every field of a counters file, on or off, in file order."""
    out: list[CounterField] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            parts = _split(line.lstrip("#").strip())
            if parts is not None:
                out.append(CounterField(parts[0], parts[1], parts[2], False, number))
            continue
        parts = _split(line)
        if parts is None:
            raise ParseError(source, number, line, "DCGM_FIELD, <gauge|counter|label>, <help text>")
        out.append(CounterField(parts[0], parts[1], parts[2], True, number))
    if not out:
        raise ParseError(source, 0, "", "a dcgm-exporter counters file (DCGM_FIELD, type, help lines)")
    return tuple(out)


def enabled_series(fields: tuple[CounterField, ...]) -> frozenset[str]:
    """The metric names a scrape with these counters carries (``label`` fields are not series)."""
    return frozenset(f.field for f in fields if f.enabled and f.type != "label")
