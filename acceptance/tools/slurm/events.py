"""srun/slurmstepd/slurmd lines that say how a job or step ended, found anywhere in a job's output or a
daemon log (also glued behind a progress bar's ``\\r`` states), and slurmd/slurmctld/journald log lines."""

from __future__ import annotations

import re

from acceptance.tools.slurm.model import LogLine, Problem, StepEvent
from acceptance.tools.slurm.text import numbered

_ID = r"(?P<job>\d+(?:_\d+)?)(?:\.(?P<step>[\w]+))?"
_CANCELLED = re.compile(r"\*\*\* (?:JOB|STEP) " + _ID + r" ON (?P<node>\S+) CANCELLED AT (?P<time>\S+)"
                        r"(?: DUE TO (?P<cause>[A-Z ]+?))?(?:, SEE SLURMCTLD LOG FOR DETAILS)? \*\*\*")  # fmt: skip
_TERMINATED = re.compile(r"\*\*\* STEP " + _ID + r" STEPD TERMINATED ON (?P<node>\S+) AT (?P<time>\S+)"
                         r" DUE TO (?P<cause>[A-Z ]+?) \*\*\*")  # fmt: skip
_NODE_FAILURE = re.compile(r"srun: error: Node failure on (?P<node>\S+)")
_ABORTED = re.compile(r"srun: Job step aborted: Waiting up to (?P<secs>\d+) seconds")
_TASK = re.compile(
    r"srun: error: (?P<node>\S+): tasks? (?P<tasks>[\d,-]+): "
    r"(?:Exited with exit code (?P<code>\d+)|(?P<how>Killed|Terminated|Segmentation fault.*))"
)
_LOG = re.compile(r"^\[(?P<time>\d{4}-\d\d-\d\dT[\d:.]+)\] (?:\[(?P<step>[\w.]+)\] )?"
                  r"(?:(?P<level>error|debug\d?|fatal|warning|info|verbose): )?(?P<text>.*)$")  # fmt: skip
_JOURNAL = re.compile(r"^(?P<time>\w{3} {1,2}\d{1,2} \d\d:\d\d:\d\d) (?P<host>\S+) (?P<ident>[\w.@-]+)(?:\[\d+\])?: "
                      r"(?:(?P<level>error|fatal|warning): )?(?P<text>.*)$")  # fmt: skip


def step_events(text: str) -> tuple[StepEvent, ...]:
    """Every job-ending srun/slurmstepd line, in order (an output without one gives ())."""
    out: list[StepEvent] = []
    for number, row in numbered(text):
        for piece in row.split("\r"):
            out.extend(_events(number, piece))
    return tuple(out)


def _events(number: int, piece: str) -> list[StepEvent]:
    out: list[StepEvent] = []
    for m in _CANCELLED.finditer(piece):
        out.append(StepEvent("cancelled", number, m.group("job"), m.group("step"), m.group("node"), m.group("time"),
                             m.group("cause"), text=m.group(0)))  # fmt: skip
    for m in _TERMINATED.finditer(piece):
        out.append(StepEvent("stepd_terminated", number, m.group("job"), m.group("step"), m.group("node"),
                             m.group("time"), m.group("cause"), text=m.group(0)))  # fmt: skip
    for m in _NODE_FAILURE.finditer(piece):
        out.append(StepEvent("node_failure", number, node=m.group("node"), cause="NODE FAILURE", text=m.group(0)))
    for m in _ABORTED.finditer(piece):
        out.append(StepEvent("step_aborted", number, text=m.group(0)))
    for m in _TASK.finditer(piece):
        code = int(m.group("code")) if m.group("code") else None
        out.append(StepEvent("task_exit", number, node=m.group("node"), cause=m.group("how"), exit_code=code,
                             text=m.group(0)))  # fmt: skip
    return out


def parse_log(text: str) -> tuple[tuple[LogLine, ...], tuple[Problem, ...]]:
    """slurmd/slurmctld log lines (``[ISO] [step] error: text``) or journald lines (``mrt 22 13:19:07 host
    slurmctld[25620]: text``, any locale's month); a grep separator ``--`` is skipped; other non-blank lines
    (a systemctl status header, prose) are problems with their numbers."""
    lines: list[LogLine] = []
    problems: list[Problem] = []
    for number, row in numbered(text):
        if not row.strip() or row.strip() == "--":
            continue
        m = _LOG.match(row)
        if m:
            lines.append(LogLine(number, m.group("time"), m.group("text"), m.group("level"), m.group("step")))
            continue
        j = _JOURNAL.match(row)
        if j:
            lines.append(LogLine(number, j.group("time"), j.group("text"), j.group("level"), None, j.group("ident")))
            continue
        problems.append(
            Problem(
                number, row, "a log line '[YYYY-MM-DDTHH:MM:SS.mmm] text' or 'Mon DD HH:MM:SS host ident[pid]: text'"
            )
        )
    return tuple(lines), tuple(problems)
