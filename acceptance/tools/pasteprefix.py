"""What pastes and log collectors put before every line of a log, taken off before a reader looks at it.

Indentation (blanks, tabs), markdown quote marks and stray backticks, output-line numbers ``[80746] ``, a
collector's time stamp ``[2025-05-10 00:18:21] `` or ``2025-05-10T00:18:21.123456789Z `` (``kubectl logs
--timestamps``), Ray's forwarding prefix ``(WorkerDict pid=1230, ip=...) `` (a stray backtick inside it too),
in any combination. Pure.
"""

from __future__ import annotations

import re

PASTE_PREFIX = re.compile(
    r"^(?:[ \t>`]+|\[\d+\] |\[\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\] ?"
    r"|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2}) "
    r"|\([\w`]+ pid=\d+(?:, ip=[^)]*)?\) ?)+"
)


def strip_prefix(raw: str) -> str:
    """`raw` without its line end and without what a paste or a log collector put before the line."""
    text = raw.rstrip("\r\n")
    if text[:1] in " \t>`[(0123456789" and (found := PASTE_PREFIX.match(text)) is not None:
        text = text[found.end() :]
    return text
