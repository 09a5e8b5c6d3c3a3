"""Reservations in the preflight: a node the acceptance's jobs cannot get because Slurm reserved it.

Slurm runs a job on a reserved node only when the job asks for that reservation (``--reservation``), so a
node of the profile inside another reservation (a MAINT window, another customer's) leaves every job over
the node set PENDING: the preflight says so, naming the reservation, its flags and its window. A
reservation that starts within `HORIZON_S` counts too (a job whose ``--time`` reaches it does not start).
The profile's own reservation (``slurm.reservation``, asked for by every job) is the one used: it must
exist and hold every node of the profile.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Protocol

from acceptance.clusters.slurm.transport import Answer
from acceptance.errors import ParseError
from acceptance.tools.slurm import Node, Reservation, parse_reservations

HORIZON_S = 4 * 3600.0
STAMP = "%Y-%m-%dT%H:%M:%S"
_SPLIT = "@@recovery-acceptance-reservations@@"


def query_command() -> str:
    """One shell line: the controller host's local time (reservation times are local), then every reservation."""
    return f"date +{STAMP}; echo {_SPLIT}; scontrol -o show reservation"


def split_answer(stdout: str) -> tuple[datetime | None, str]:
    """(now, the reservations' text) from `query_command`'s output."""
    head, _, text = stdout.partition(f"{_SPLIT}\n")
    return _when(head.strip()), text


def _when(text: str | None) -> datetime | None:
    try:
        return datetime.strptime(text or "", STAMP)
    except ValueError:
        return None


def describe(resv: Reservation) -> str:
    """``reservation maint (flags MAINT,SPEC_NODES; ACTIVE 2026-... to 2026-... (02:00:00); users root)``."""
    who = [f"users {','.join(resv.users)}" if resv.users else "", f"accounts {','.join(resv.accounts)}"
           if resv.accounts else ""]  # fmt: skip
    parts = [f"flags {','.join(resv.flags) or 'none'}", f"{resv.state or 'state unknown'} {resv.window}", *who]
    return f"reservation {resv.name} ({'; '.join(p for p in parts if p)})"


def _soon(resv: Reservation, now: datetime | None, horizon_s: float) -> bool:
    """Active, or starting before now + horizon (a start that cannot be read counts as soon)."""
    if resv.state == "ACTIVE":
        return True
    start = _when(resv.start)
    return start is None or now is None or start <= now + timedelta(seconds=horizon_s)


def blocked(
    nodes: Sequence[str],
    reservations: Sequence[Reservation],
    ours: str | None,
    now: datetime | None,
    horizon_s: float = HORIZON_S,
) -> dict[str, str]:
    """node → why the acceptance's jobs cannot run there because of a reservation (nodes missing: they can)."""
    out: dict[str, str] = {}
    if ours:
        mine = next((r for r in reservations if r.name == ours), None)
        if mine is None:
            listed = ", ".join(r.name for r in reservations) or "none"
            return {n: f"reservation {ours} of the profile (slurm.reservation) is not on the cluster "
                       f"(scontrol show reservation lists: {listed})" for n in nodes}  # fmt: skip
        start = _when(mine.start)
        late = mine.state != "ACTIVE" and start is not None and now is not None and start > now
        for name in nodes:
            if name not in mine.nodes:
                out[name] = f"not in {describe(mine)}, the profile's reservation (slurm.reservation)"
            elif late:
                out[name] = f"{describe(mine)}, the profile's reservation, has not started: jobs wait for it"
        return out
    for name in nodes:
        found = [r for r in reservations if name in r.nodes and _soon(r, now, horizon_s)]
        if found:
            said = "; ".join(describe(r) for r in found)
            out[name] = (f"in {said}, not the profile's: the acceptance's jobs would wait (name the reservation in "
                         "the profile's slurm.reservation to run inside it)")  # fmt: skip
    return out


class Runs(Protocol):
    def __call__(self, argv: Sequence[str] | str, timeout_s: float | None = None) -> Answer: ...


def read_blocked(run: Runs, known: Mapping[str, Node], nodes: Sequence[str], ours: str | None) -> dict[str, str]:
    """`blocked` for `nodes` from the cluster's reservations now; when they cannot be read, the nodes Slurm
    marks RESERVED are named with the failure (never taken for free)."""
    answer = run(query_command())
    problem = "" if answer.ok else answer.said()
    if answer.ok:
        now, text = split_answer(answer.stdout)
        try:
            found, _ = parse_reservations(text, "scontrol -o show reservation")
        except ParseError as exc:
            problem = str(exc)
        else:
            return blocked(nodes, found, ours, now)
    return {n: f"Slurm state {known[n].state}: reserved, and the reservations could not be read: {problem}"
            for n in nodes if n in known and "RESERVED" in known[n].state.flags}  # fmt: skip
