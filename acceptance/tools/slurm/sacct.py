"""``sacct``: ``--parsable``/``--parsable2`` (any ``--delimiter``, with or without a header) and the default
fixed-width table with its dash ruler (``-l`` included; values cut with ``+`` are kept as printed).

``CANCELLED by 10304007`` gives state CANCELLED and the canceller's uid; ``JobID`` ``7965768.batch`` gives
job 7965768 step ``batch``; ``ExitCode`` ``2:9`` gives exit code 2 and signal 9.
"""

from __future__ import annotations

import re

from acceptance.errors import ParseError
from acceptance.tools.slurm.model import AcctRow, Problem, Row
from acceptance.tools.slurm.table import delimited, ruled
from acceptance.tools.slurm.text import numbered, prompt

_RULER = re.compile(r"^-+(?: +-+)*$")
_STATE = re.compile(r"^(?P<state>[A-Z_]+)\+?(?: by (?P<uid>\d+))?$")

# The query our own code runs: the fields of `acct_rows`, no header, '|' (a comment cannot be split back: last).
ACCT_FIELDS = ("JobID", "JobName", "State", "ExitCode", "NodeList", "Elapsed", "Comment")


def acct_query(job_ids: tuple[str, ...]) -> list[str]:
    return ["sacct", "--parsable2", "--noheader", "--format", ",".join(ACCT_FIELDS), "--jobs", ",".join(job_ids)]


def _row(row: Row, source: str) -> AcctRow:
    job = row.get("JOBID")
    job_id, dot, step = job.partition(".")
    state_text = row.get("STATE")
    match = _STATE.match(state_text)
    if state_text and not match:
        raise ParseError(source, row.line, state_text, "a job state such as COMPLETED, TIMEOUT or 'CANCELLED by UID'")
    code = signal = None
    exit_text = row.get("EXITCODE")
    if exit_text:
        parts = exit_text.split(":")
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise ParseError(source, row.line, exit_text, "ExitCode as CODE:SIGNAL")
        code, signal = int(parts[0]), int(parts[1])
    return AcctRow(job_id, step if dot else None, match.group("state") if match else "",
                   match.group("uid") if match else None, code, signal, dict(row.cells), row.line)  # fmt: skip


def parse_sacct(
    text: str, source: str = "<text>", fields: tuple[str, ...] | None = None, delimiter: str = "|"
) -> tuple[tuple[AcctRow, ...], tuple[Problem, ...]]:
    """Rows of sacct output. `fields` are the ``--format`` names when the output has no header
    (``--noheader``); without them the first line is the header (parsable) or header + ruler (table)."""
    body = [(n, row) for n, row in numbered(text) if row.strip() and prompt(row) is None]
    if not body:
        raise ParseError(source, 0, "", "sacct output")
    problems: list[Problem] = []
    if len(body) >= 2 and _RULER.match(body[1][1].strip()) and fields is None:
        _, rows = ruled(body[0][1], body[1][1], body[2:])
    else:
        if fields is None:
            names = [f.strip().upper() for f in body[0][1].split(delimiter)]
            if names and names[-1] == "":
                names.pop()
            if "JOBID" not in names:
                raise ParseError(
                    source, body[0][0], body[0][1], f"a sacct header with JobID separated by {delimiter!r}"
                )
            body = body[1:]
        else:
            names = [f.upper() for f in fields]
        rows, problems = delimited(names, body, delimiter)
        if body and not rows:
            raise ParseError(
                source, body[0][0], body[0][1], f"sacct rows of {len(names)} fields separated by {delimiter!r}"
            )
    return tuple(_row(r, source) for r in rows), tuple(problems)
