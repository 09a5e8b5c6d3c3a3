"""``kubectl get nodes`` and ``kubectl get pods`` tables.

With a header: ``NAME STATUS [ROLES] AGE [VERSION] [<-L label columns>]`` (ROLES since 1.6, VERSION
since 1.8; ``-o wide``'s address/OS columns are not kept) and ``[NAMESPACE] NAME READY STATUS RESTARTS
AGE [IP NODE NOMINATED NODE READINESS GATES]``. A table ends at the first row whose STATUS (nodes) or
READY (pods) does not have that column's shape. Without a header (``get pods | grep``), a pod row is
read by its shape: ``[<namespace>] <name> <n>/<m> <status> <restarts> <age> [<ip> <node> …]``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from acceptance.tools.kubectl.model import NodeRow, PodRow
from acceptance.tools.kubectl.table import AGE, header

T = TypeVar("T")

_NODE_STATUS = re.compile(r"^(?:Ready|NotReady|Unknown)(?:,[A-Za-z]+)*$")
_NODES_HEADER = re.compile(r"^NAME\s+STATUS\s+(?:ROLES\s+)?AGE\b")
_PODS_HEADER = re.compile(r"^(?:NAMESPACE\s+)?NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\b")
_READY = re.compile(r"^\d+/\d+$")
_AGE = re.compile(rf"^{AGE}$")
_RESTARTS = re.compile(r"^\d+(?: \([^)]*\))?$")
_POD_ROW = re.compile(
    rf"^(?:(?P<namespace>[a-z0-9][-a-z0-9]*)\s+)?(?P<name>[a-z0-9][-a-z0-9.]*)\s+(?P<ready>\d+/\d+)\s+"
    rf"(?P<status>[A-Za-z][\w:-]*)\s+(?P<restarts>\d+(?: \([^)]*\))?)\s+(?P<age>{AGE})(?:\s+(?P<rest>\S.*))?$"
)
_NODE_FIXED = {"NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE",
               "KERNEL-VERSION", "CONTAINER-RUNTIME"}  # fmt: skip


def is_nodes_header(line: str) -> bool:
    return bool(_NODES_HEADER.match(line))


def is_pods_header(line: str) -> bool:
    return bool(_PODS_HEADER.match(line))


def _rows(
    lines: list[tuple[int, str]], start: int, make: Callable[[dict[str, str], int], T | None]
) -> tuple[list[T], int]:
    """The rows under the header ``lines[start]`` that `make` accepts; stops at the first it refuses (the
    table's end, or a row cut by the paste). Returns them and the next index."""
    head = header(lines[start][1])
    out: list[T] = []
    i = start + 1
    while i < len(lines):
        number, row = lines[i]
        cells = head.cells(row) if row.strip() else None
        made = make(cells, number) if cells is not None else None
        if made is None:
            break
        out.append(made)
        i += 1
    return out, i


def _node(cells: dict[str, str], number: int) -> NodeRow | None:
    if (
        not cells.get("NAME")
        or not _NODE_STATUS.match(cells.get("STATUS", ""))
        or not _AGE.match(cells.get("AGE", ""))
        or ("VERSION" in cells and not cells["VERSION"])
    ):
        return None
    labels = {k.lower(): v for k, v in cells.items() if k not in _NODE_FIXED and v}
    return NodeRow(cells["NAME"], cells["STATUS"], cells.get("ROLES", ""), cells.get("AGE", ""),
                   cells.get("VERSION", ""), labels, number)  # fmt: skip


def _pod(cells: dict[str, str], number: int) -> PodRow | None:
    if (
        not _READY.match(cells.get("READY", ""))
        or not _RESTARTS.match(cells.get("RESTARTS", ""))
        or not _AGE.match(cells.get("AGE", ""))
    ):
        return None
    node = cells.get("NODE", "")
    return PodRow(cells.get("NAME", ""), cells["READY"], cells.get("STATUS", ""), cells["RESTARTS"],
                  cells.get("AGE", ""), cells.get("NAMESPACE", ""),
                  node if node and node != "<none>" else None, number)  # fmt: skip


def nodes(lines: list[tuple[int, str]], start: int) -> tuple[list[NodeRow], int]:
    """The rows under the ``get nodes`` header ``lines[start]``; returns them and the next index."""
    return _rows(lines, start, _node)


def pods(lines: list[tuple[int, str]], start: int) -> tuple[list[PodRow], int]:
    """The rows under the ``get pods`` header ``lines[start]``; returns them and the next index."""
    return _rows(lines, start, _pod)


def pod_row(number: int, line: str) -> PodRow | None:
    """A ``get pods`` row without its header (the shape in the module's docstring), or None."""
    match = _POD_ROW.match(line) if "/" in line else None
    if not match:
        return None
    rest = (match.group("rest") or "").split()
    node = rest[1] if len(rest) >= 2 and rest[1] != "<none>" else None
    return PodRow(match.group("name"), match.group("ready"), match.group("status"), match.group("restarts"),
                  match.group("age"), match.group("namespace") or "", node, number)  # fmt: skip
