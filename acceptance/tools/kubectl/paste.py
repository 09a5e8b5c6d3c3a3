"""A paste as people make it, made back into kubectl's lines.

Undone before any table is read: CR line ends; a prefix every line carries (markdown quote marks
``> `` / ``> > ``, indentation by blanks or TABs); quote marks left at the start of a line (a quoted
block after a line of prose; kubectl prints no line that starts with ``>``); trailing blanks;
markdown fences and the backticks of inline code around a line. Elision lines written by the person
pasting (``...``, ``[...]``, ``…``) are taken out and their line numbers kept, so a table continues
across them. Line numbers stay those of the original text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PREFIX_CHARS = " \t>"
_ELISION = re.compile(r"^\s*(?:\.{3,}|\[\.{3,}\]|\(\.{3,}\)|…|\[…\])\s*$")
_FENCE = re.compile(r"^\s*(?:```[\w.{}-]*|`)\s*$")
_INLINE_CODE = re.compile(r"^`([^`].*?)`?$")
_QUOTE = re.compile(r"^(?:> ?)+")


@dataclass(frozen=True)
class Paste:
    """The lines to read, as (1-based line number, text), and the line numbers of elision marks."""

    lines: tuple[tuple[int, str], ...]
    elided: tuple[int, ...]
    prefix: str


def _common_prefix(rows: list[str]) -> str:
    """The longest run of blanks, TABs and ``>`` that every line with content starts with."""
    content = [r for r in rows if r.strip(_PREFIX_CHARS)]
    if not content:
        return ""
    first = content[0]
    n = 0
    while n < len(first) and first[n] in _PREFIX_CHARS and all(len(r) > n and r[n] == first[n] for r in content):
        n += 1
    return first[:n]


def read(text: str) -> Paste:
    """`text` split into lines with the paste's wrappers undone (see the module's docstring)."""
    raw = text.split("\n")
    if raw and raw[-1] == "":
        raw.pop()
    rows = [r.rstrip("\r").rstrip() for r in raw]
    prefix = _common_prefix(rows)
    lines: list[tuple[int, str]] = []
    elided: list[int] = []
    for number, row in enumerate(rows, 1):
        if not row.strip(_PREFIX_CHARS):
            lines.append((number, ""))
            continue
        body = _QUOTE.sub("", row[len(prefix) :])
        if _ELISION.match(body):
            elided.append(number)
            continue
        if _FENCE.match(body):
            continue
        code = _INLINE_CODE.match(body)
        lines.append((number, code.group(1).rstrip() if code else body))
    return Paste(tuple(lines), tuple(elided), prefix)
