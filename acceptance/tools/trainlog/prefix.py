"""A decoration every line of a log carries: markdown indentation or quoting (`    `, `> `), a
comment marker (`    # `, `// `). A log pasted into an issue, a wiki or a script comes so.

It is read from the log's first lines (`HEAD`) and taken off every line that has it; a line
that is only the decoration (a blank quoted line: `>`) becomes a blank line. Per-line rank or
launcher prefixes (`[default7]:`, `[rank0]:`) are not decorations: they name a rank.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence

HEAD = 64
DECORATION = re.compile(r"[ \t]*(?:(?:>|#+|//)[ \t]*)*")


def common_prefix(head: Sequence[str]) -> str:
    """The decoration all non-blank lines of `head` share ("" when none)."""
    found: list[str] = []
    for raw in head:
        line = raw.rstrip("\r\n")
        m = DECORATION.match(line)
        if m is None or m.end() == len(line.rstrip()):  # blank, or only the decoration
            continue
        found.append(m.group())
    if not found:
        return ""
    low, high = min(found), max(found)  # the common prefix of all is that of these two
    size = next((i for i, (a, b) in enumerate(zip(low, high, strict=False)) if a != b), len(low))
    return low[:size]


def strip_prefix(lines: Iterable[str], prefix: str) -> Iterator[str]:
    """`lines` without `prefix` (line ends kept)."""
    size = len(prefix)
    bare = prefix.rstrip()
    for line in lines:
        if line.startswith(prefix):
            yield line[size:]
        elif bare and line.startswith(bare) and not line[len(bare) :].strip():
            yield line[len(bare) :]
        else:
            yield line
