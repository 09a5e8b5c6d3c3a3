"""``scontrol -o show job`` and ``scontrol -o show step``: one ``Key=value`` record per line (``JobId=``,
``StepId=``), split as ``scontrol show node`` is; multi-line records (continuation lines indented) too."""

from __future__ import annotations

from acceptance.tools.slurm.model import Problem
from acceptance.tools.slurm.scontrol import fields_of
from acceptance.tools.slurm.text import numbered, prompt

NO_JOB = "Invalid job id specified"


def parse_records(text: str, key: str) -> tuple[tuple[dict[str, str], ...], tuple[Problem, ...]]:
    """Every record that starts with ``KEY=`` (``JobId``, ``StepId``); other non-blank lines are problems
    (``No job steps exist`` and scontrol's ``Invalid job id specified`` among them: the caller decides)."""
    out: list[dict[str, str]] = []
    problems: list[Problem] = []
    block: list[str] = []
    for number, row in numbered(text):
        stripped = row.strip()
        if stripped.startswith(f"{key}="):
            if block:
                out.append(fields_of(" ".join(block)))
            block = [stripped]
        elif block and stripped and row[:1].isspace():
            block.append(stripped)
        elif stripped:
            if block:
                out.append(fields_of(" ".join(block)))
                block = []
            if prompt(row) is None:
                problems.append(Problem(number, row, f"a {key}= record"))
    if block:
        out.append(fields_of(" ".join(block)))
    return tuple(out), tuple(problems)
