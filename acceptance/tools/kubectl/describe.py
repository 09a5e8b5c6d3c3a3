"""``kubectl describe node|pod`` blocks: ``Key:  Value`` lines nested by indentation, tables inside."""

from __future__ import annotations

import re

from acceptance.tools.kubectl import events
from acceptance.tools.kubectl.model import Condition, ContainerState, Event, NodeDescription, PodDescription
from acceptance.tools.kubectl.table import Header, header, is_ruler

_KEY = re.compile(r"^( *)([A-Za-z][\w .()-]*?):(?:\s+(.*))?$")


_TIME = r"[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} [+-]\d{4}"
# a Conditions row by its shape: a type, a status, two RFC 1123 times, then Reason and Message
_CONDITION_ROW = re.compile(
    rf"^\s*(?P<type>[A-Za-z][\w.-]*)\s+(?P<status>True|False|Unknown)\s+(?P<heartbeat>{_TIME})\s+"
    rf"(?P<transition>{_TIME})(?:\s+(?P<reason>\S+)(?:\s+(?P<message>\S.*))?)?$"
)
_STATUSES = ("True", "False", "Unknown")
_FULL_TIME = re.compile(rf"^{_TIME}$")
_ITEM = re.compile(r"^\s+([\w./-]+):\s+(\S.*)$")
_POD_MESSAGE = re.compile(r"^Message:\s{2,}Pod\s")


def is_conditions_header(line: str) -> bool:
    stripped = line.strip()
    return stripped.startswith("Type") and "Status" in stripped and "LastHeartbeatTime" in stripped


def _condition(number: int, row: str, head: Header | None) -> Condition | None:
    """One Conditions row: by the header's columns when there is one, else (or when they do not fit) by its shape."""
    cells = head.cells(row) if head is not None else None
    if (
        cells is not None
        and cells.get("Status") in _STATUSES
        and cells.get("Type", "").isidentifier()
        and _FULL_TIME.match(cells.get("LastTransitionTime", ""))
    ):
        return Condition(type=cells["Type"], status=cells["Status"], reason=cells.get("Reason", ""),
                         message=cells.get("Message", ""),
                         heartbeat=events.absolute(cells.get("LastHeartbeatTime", "")),
                         transition=events.absolute(cells.get("LastTransitionTime", "")), line=number)  # fmt: skip
    match = _CONDITION_ROW.match(row)
    if not match:
        return None
    return Condition(type=match.group("type"), status=match.group("status"), reason=match.group("reason") or "",
                     message=match.group("message") or "", heartbeat=events.absolute(match.group("heartbeat")),
                     transition=events.absolute(match.group("transition")), line=number)  # fmt: skip


def is_condition_row(row: str) -> bool:
    return ("True" in row or "False" in row or "Unknown" in row) and bool(_CONDITION_ROW.match(row))


def is_pod_message(row: str) -> bool:
    """``Message:   Pod …``: a pod's status message (``Pod Allocate failed …``, ``Pod The node had condition …``)."""
    return bool(_POD_MESSAGE.match(row))


def _value_block(lines: list[tuple[int, str]], i: int, first: str) -> tuple[list[str], int]:
    """A value and its continuation lines (indented to the value column, no key of their own)."""
    values = [first] if first else []
    column = len(lines[i][1]) - len(lines[i][1].lstrip()) + 1
    j = i + 1
    while j < len(lines):
        row = lines[j][1]
        if not row.strip() or _KEY.match(row) or len(row) - len(row.lstrip()) <= column:
            break
        values.append(row.strip())
        j += 1
    return values, j


def _items(lines: list[tuple[int, str]], i: int) -> tuple[dict[str, str], int]:
    """The ``key:  value`` items under a section key (indented by one blank or more)."""
    out: dict[str, str] = {}
    j = i + 1
    while j < len(lines) and (item := _ITEM.match(lines[j][1])):
        out.setdefault(item.group(1), item.group(2).strip())
        j += 1
    return out, j


def node(lines: list[tuple[int, str]], name: str | None = None) -> NodeDescription:
    """A ``describe node`` block (or the part that was pasted); `name` is the node the command line names."""
    taints: list[str] = []
    unschedulable: bool | None = None
    conditions: list[Condition] = []
    found_events: list[Event] = []
    sections: dict[str, dict[str, str]] = {}
    unread: list[int] = []
    head: Header | None = None
    i = 0
    while i < len(lines):
        number, row = lines[i]
        key = _KEY.match(row)
        if is_conditions_header(row):
            head = header(row)
            i += 1
            continue
        if events.is_header(row):
            found, i, cut = events.table(lines, i)
            found_events.extend(found)
            unread += cut
            head = None
            continue
        if is_ruler(row):
            i += 1
            continue
        if not row.strip() or (key and not key.group(1)):
            head = None
        condition = _condition(number, row, head) if row.strip() else None
        if condition is not None:
            conditions.append(condition)
            i += 1
            continue
        event = events.row(number, row)
        if event is not None:
            found_events.append(event)
            i += 1
            continue
        if head is not None and row[:1].isspace() and not key:
            unread.append(number)  # under the Conditions header, but no row (cut short, shifted cells)
        if key and not key.group(1):
            k, v = key.group(2), (key.group(3) or "").strip()
            if k == "Name" and v:
                name = v
            elif k == "Taints":
                values, i = _value_block(lines, i, v)
                taints = [t for t in values if t != "<none>"]
                continue
            elif k == "Unschedulable":
                unschedulable = v == "true"
            elif k in ("Capacity", "Allocatable", "Addresses") and not v:
                sections[k], i = _items(lines, i)
                continue
        i += 1
    start = lines[0][0] if lines else 0
    return NodeDescription(name, tuple(taints), unschedulable, tuple(conditions), tuple(found_events), start,
                           sections.get("Capacity", {}), sections.get("Allocatable", {}),
                           sections.get("Addresses", {}).get("Hostname"), tuple(unread))  # fmt: skip


def pod(lines: list[tuple[int, str]], name: str | None = None) -> PodDescription:
    """A ``describe pod`` block (or the part that was pasted); `name` is the pod the command line names."""
    top: dict[str, str] = {}
    containers: list[ContainerState] = []
    pod_events: list[Event] = []
    unread: list[int] = []
    current: dict[str, str] | None = None
    section: str | None = None
    state_key: str | None = None
    in_init = False

    def close() -> None:
        if current is not None:
            code = current.get("Last State/Exit Code") or current.get("State/Exit Code")
            restarts = current.get("Restart Count")
            containers.append(ContainerState(
                name=current["name"], image=current.get("Image"), image_id=current.get("Image ID") or None,
                state=current.get("State"), state_reason=current.get("State/Reason"),
                last_state=current.get("Last State"), last_reason=current.get("Last State/Reason"),
                exit_code=int(code) if code and code.lstrip("-").isdigit() else None,
                restart_count=int(restarts) if restarts and restarts.isdigit() else None, init=in_init,
            ))  # fmt: skip

    i = 0
    while i < len(lines):
        _, row = lines[i]
        if events.is_header(row):
            found, i, cut = events.table(lines, i)
            pod_events.extend(found)
            unread += cut
            continue
        key = _KEY.match(row)
        if not key:
            event = events.row(lines[i][0], row)
            if event is not None:
                pod_events.append(event)
            i += 1
            continue
        indent, k, v = len(key.group(1)), key.group(2), (key.group(3) or "").strip()
        if indent == 0:
            close()
            current = None
            section = k
            in_init = k == "Init Containers"
            top.setdefault(k, v)
        elif section in ("Containers", "Init Containers"):
            if indent == 2 and not v:
                close()
                current = {"name": k}
                state_key = None
            elif current is not None and indent == 4:
                current.setdefault(k, v)
                state_key = k if k in ("State", "Last State") else None
            elif current is not None and indent == 6 and state_key:
                current.setdefault(f"{state_key}/{k}", v)
        i += 1
    close()
    node_field = top.get("Node", "")
    node_name = node_field.split("/", 1)[0] or None
    return PodDescription(
        name=top.get("Name") or name, namespace=top.get("Namespace") or None,
        node=None if node_name in (None, "<none>") else node_name, status=top.get("Status") or None,
        reason=top.get("Reason") or None, message=top.get("Message") or None, containers=tuple(containers),
        events=tuple(pod_events), line=lines[0][0] if lines else 0, unread=tuple(unread),
    )  # fmt: skip
