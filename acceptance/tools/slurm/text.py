"""Line handling shared by the Slurm parsers: CRLF, a consistent quote/indent prefix, shell prompts."""

from __future__ import annotations

import re

_PREFIX = re.compile(r"^(?:[ \t]*[#>])*[ \t]*")
_PREFIX_ONLY = re.compile(r"^[\s#>]*$")
_COMMANDS = (
    r"(?:sudo\s+)?(?:sinfo|squeue|scontrol|sacct|srun|sbatch|salloc|scancel|sacctmgr|sstat|journalctl|systemctl)\b"
)
_PROMPT = re.compile(r"^(?P<prompt>.{0,80}?)[$#%>]\s+(?P<cmd>" + _COMMANDS + r".*)$")

Lines = list[tuple[int, str]]


def _common(a: str, b: str) -> str:
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return a[:n]


def numbered(text: str) -> Lines:
    """(1-based number, line) with one trailing CR removed, the prefix every non-blank line shares removed
    (markdown ``> ``, a comment ``# ``, an indentation) and trailing blanks removed. Lines that hold only
    blanks or quote marks become empty. ``\\r`` inside a line (progress bars) is kept."""
    raw = text.split("\n")
    if raw and raw[-1] == "":
        raw.pop()
    lines = [line[:-1] if line.endswith("\r") else line for line in raw]
    prefix: str | None = None
    for line in lines:
        if _PREFIX_ONLY.match(line):
            continue
        match = _PREFIX.match(line)
        found = match.group(0) if match else ""
        prefix = found if prefix is None else _common(prefix, found)
    cut = len(prefix or "")
    out: Lines = []
    for number, line in enumerate(lines, 1):
        if _PREFIX_ONLY.match(line):
            out.append((number, ""))
        else:
            out.append((number, line[cut:].rstrip(" \t")))
    return out


def prompt(line: str) -> str | None:
    """The command of a shell prompt line (``[opc@mgmt ~]$ sinfo -R`` gives ``sinfo -R``), else None."""
    match = _PROMPT.match(line)
    return match.group("cmd").strip() if match else None
