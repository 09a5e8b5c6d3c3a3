"""``scontrol show reservation`` in both forms (multi-line records, ``-o``), and the query our own code runs.

``No reservations in the system`` gives no records. Keys are split at a blank followed by ``Key=`` (as for
``scontrol show node``); ``Nodes=`` is a hostlist (``sim-node-[01,03]``), ``Flags=`` a comma list
(``MAINT,SPEC_NODES``); times are printed in the controller's local time without a zone, kept as printed.
"""

from __future__ import annotations

from acceptance.errors import ParseError
from acceptance.tools.slurm.model import Problem, Reservation
from acceptance.tools.slurm.scontrol import fields_of
from acceptance.tools.slurm.state import hostlist
from acceptance.tools.slurm.text import numbered, prompt

NONE = "No reservations in the system"


def reservation_query() -> list[str]:
    """argv of the query `parse_reservations` reads: every reservation, one line each."""
    return ["scontrol", "-o", "show", "reservation"]


def _known(value: str | None) -> str | None:
    return None if value in (None, "", "(null)", "N/A") else value


def _list(value: str | None) -> tuple[str, ...]:
    return tuple(x for x in (_known(value) or "").split(",") if x)


def _record(block: list[tuple[int, str]]) -> Reservation:
    fields = fields_of(" ".join(row for _, row in block))
    nodes = _known(fields.get("Nodes"))
    return Reservation(
        name=fields.get("ReservationName", ""), state=fields.get("State", "").upper(),
        start=_known(fields.get("StartTime")), end=_known(fields.get("EndTime")),
        duration=_known(fields.get("Duration")), nodes=hostlist(nodes) if nodes else (),
        flags=_list(fields.get("Flags")), users=_list(fields.get("Users")), accounts=_list(fields.get("Accounts")),
        partition=_known(fields.get("PartitionName")), fields=fields, line=block[0][0],
    )  # fmt: skip


def parse_reservations(text: str, source: str = "<text>") -> tuple[tuple[Reservation, ...], tuple[Problem, ...]]:
    """Every reservation record, and the lines that belong to none; ParseError when the text is neither
    records nor Slurm's "no reservations" line."""
    out: list[Reservation] = []
    problems: list[Problem] = []
    block: list[tuple[int, str]] = []
    said_none = False
    for number, row in numbered(text):
        stripped = row.strip()
        if stripped.startswith("ReservationName="):
            if block:
                out.append(_record(block))
            block = [(number, stripped)]
        elif block and stripped and row[:1].isspace():
            block.append((number, stripped))
        elif not stripped:
            continue
        else:
            if block:
                out.append(_record(block))
                block = []
            if stripped == NONE:
                said_none = True
            elif prompt(row) is None:
                problems.append(Problem(number, row, "a ReservationName= record or one of its indented lines"))
    if block:
        out.append(_record(block))
    if not out and not said_none:
        first = next(((n, row) for n, row in numbered(text) if row.strip()), (0, ""))
        raise ParseError(
            source, first[0], first[1], f"scontrol show reservation output (ReservationName=... or {NONE!r})"
        )
    return tuple(out), tuple(problems)
