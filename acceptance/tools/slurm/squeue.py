"""``squeue``: a custom ``-o`` format (with or without ``-h``) cut on its literal separators, and ``--json``."""

from __future__ import annotations

import json
from typing import Any

from acceptance.errors import ParseError
from acceptance.tools.slurm.model import Job, Table
from acceptance.tools.slurm.table import format_fields, formatted
from acceptance.tools.slurm.text import numbered, prompt

LETTERS = {
    "a": "ACCOUNT", "A": "JOBID", "b": "TRES_PER_NODE", "B": "EXEC_HOST", "C": "CPUS", "D": "NODES",
    "e": "END_TIME", "E": "DEPENDENCY", "F": "ARRAY_JOB_ID", "i": "JOBID", "j": "NAME", "k": "COMMENT",
    "K": "ARRAY_TASK_ID", "l": "TIME_LIMIT", "L": "TIME_LEFT", "M": "TIME", "m": "MIN_MEMORY", "N": "NODELIST",
    "o": "COMMAND", "P": "PARTITION", "q": "QOS", "Q": "PRIORITY", "r": "REASON", "R": "NODELIST(REASON)",
    "S": "START_TIME", "t": "ST", "T": "STATE", "u": "USER", "U": "UID", "V": "SUBMIT_TIME", "x": "EXC_NODES",
    "Z": "WORK_DIR",
}  # fmt: skip

# The query our own code runs to find the jobs of one run: no header, the comment (free text) last.
JOB_FORMAT = "%i|%j|%T|%u|%N|%r|%k"


def parse_squeue(text: str, fmt: str, source: str = "<text>") -> Table:
    """Rows of ``squeue -o FMT`` output (a header line of the same format is skipped)."""
    fields, pattern = format_fields(fmt, LETTERS)
    body = [(n, row) for n, row in numbered(text) if row.strip() and prompt(row) is None]
    head = pattern.match(body[0][1]) if body else None
    if head and [c.strip().upper() for c in head.groups()] == fields:
        body = body[1:]
    rows, problems = formatted(fields, pattern, body, fmt)
    if body and not rows:
        raise ParseError(source, body[0][0], body[0][1], f"squeue rows of the format {fmt!r}")
    return Table(tuple(fields), tuple(rows), tuple(problems))


def jobs(table: Table) -> tuple[Job, ...]:
    """Job records of a parsed squeue table (cells the format did not ask for are empty)."""
    out: list[Job] = []
    for row in table.rows:
        reason = row.get("REASON") or row.get("NODELIST(REASON)")
        nodes = row.get("NODELIST")
        if not nodes and not reason.startswith("("):
            nodes = reason
        out.append(Job(row.get("JOBID"), row.get("NAME"), row.get("STATE") or row.get("ST"), row.get("COMMENT"),
                       row.get("USER"), nodes, reason.strip("()") if reason.startswith("(") else row.get("REASON"),
                       row.line))  # fmt: skip
    return tuple(out)


def _state(value: Any) -> str:
    if isinstance(value, list):
        return "+".join(str(v) for v in value)
    return str(value or "")


def parse_squeue_json(text: str, source: str = "<text>") -> tuple[Job, ...]:
    """Jobs of ``squeue --json`` (Slurm 21.08+; ``job_state`` a string in 22.05, a list from 23.02)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(source, exc.lineno, "", f"squeue --json output ({exc.msg})") from None
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), list):
        raise ParseError(source, 0, "", 'squeue --json output (an object with a "jobs" list)')
    out: list[Job] = []
    for job in data["jobs"]:
        if not isinstance(job, dict) or "job_id" not in job:
            raise ParseError(source, 0, str(job)[:80], "a job object with job_id")
        out.append(Job(str(job["job_id"]), str(job.get("name") or ""), _state(job.get("job_state")),
                       str(job.get("comment") or ""), str(job.get("user_name") or ""), str(job.get("nodes") or ""),
                       str(job.get("state_reason") or "")))  # fmt: skip
    return tuple(out)
