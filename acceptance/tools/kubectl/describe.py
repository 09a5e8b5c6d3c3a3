"""``kubectl describe node|pod`` blocks: ``Key:  Value`` lines nested by indentation, tables inside."""

from __future__ import annotations

import re

from acceptance.tools import logtime
from acceptance.tools.kubectl.model import Condition, ContainerState, Event, NodeDescription, PodDescription
from acceptance.tools.kubectl.table import age, columns, split_row

_KEY = re.compile(r"^( *)([A-Za-z][\w .()-]*?):(?:\s+(.*))?$")
_TABLE_END = re.compile(r"^\S")


def events_table(lines: list[tuple[int, str]], start: int) -> tuple[list[Event], int]:
    """Rows of the events table whose header line is ``lines[start]``; returns them and the next index."""
    number, header = lines[start]
    cols = columns(header)
    names = {n.upper(): n for n, _ in cols}
    i = start + 1
    if i < len(lines) and set(lines[i][1].strip()) <= {"-", " "}:
        i += 1
    out: list[Event] = []
    while i < len(lines):
        number, row = lines[i]
        if not row.strip() or (_TABLE_END.match(row) and "LAST SEEN" not in names) or _looks_like_prompt(row):
            break
        cells = split_row(row, cols)
        seen = cells.get(names.get("AGE", names.get("LAST SEEN", "")), "")
        last, count, over = age(seen)
        out.append(Event(type=cells.get(names.get("TYPE", ""), ""), reason=cells.get(names.get("REASON", ""), ""),
                         message=cells.get(names.get("MESSAGE", ""), ""), last_seen=last, count=count, over=over,
                         source=cells.get(names.get("FROM", ""), ""), object=cells.get(names.get("OBJECT", ""), ""),
                         line=number))  # fmt: skip
        i += 1
    return out, i


def _looks_like_prompt(row: str) -> bool:
    return bool(re.match(r"^(?:\S+ )?[$%#] |^[A-Za-z]:\\.*>", row))


def conditions_table(lines: list[tuple[int, str]], start: int) -> tuple[list[Condition], int]:
    """A node's ``Conditions:`` table (``Type Status LastHeartbeatTime LastTransitionTime Reason Message``)."""
    _, header = lines[start]
    cols = columns(header)
    i = start + 1
    if i < len(lines) and set(lines[i][1].strip()) <= {"-", " "}:
        i += 1
    out: list[Condition] = []
    while i < len(lines):
        number, row = lines[i]
        if not row.strip() or not row.startswith(" "):
            break
        cells = split_row(row, cols)
        out.append(Condition(type=cells.get("Type", ""), status=cells.get("Status", ""),
                             reason=cells.get("Reason", ""), message=cells.get("Message", ""),
                             heartbeat=logtime.parse_rfc1123(cells.get("LastHeartbeatTime", "")),
                             transition=logtime.parse_rfc1123(cells.get("LastTransitionTime", "")),
                             line=number))  # fmt: skip
        i += 1
    return out, i


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


def node(lines: list[tuple[int, str]]) -> NodeDescription:
    name: str | None = None
    taints: list[str] = []
    unschedulable: bool | None = None
    conditions: list[Condition] = []
    events: list[Event] = []
    i = 0
    while i < len(lines):
        row = lines[i][1]
        key = _KEY.match(row)
        stripped = row.strip()
        if stripped.startswith("Type") and "Status" in stripped and "LastHeartbeatTime" in stripped:
            found, i = conditions_table(lines, i)
            conditions.extend(found)
            continue
        if stripped.startswith("Type") and "Reason" in stripped and "Message" in stripped:
            found_events, i = events_table(lines, i)
            events.extend(found_events)
            continue
        if key and not key.group(1):
            k, v = key.group(2), (key.group(3) or "").strip()
            if k == "Name":
                name = v
            elif k == "Taints":
                values, i = _value_block(lines, i, v)
                taints = [t for t in values if t != "<none>"]
                continue
            elif k == "Unschedulable":
                unschedulable = v == "true"
        i += 1
    start = lines[0][0] if lines else 0
    return NodeDescription(name, tuple(taints), unschedulable, tuple(conditions), tuple(events), start)


def pod(lines: list[tuple[int, str]]) -> PodDescription:
    top: dict[str, str] = {}
    containers: list[ContainerState] = []
    events: list[Event] = []
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
        stripped = row.strip()
        if stripped.startswith("Type") and "Reason" in stripped and "Message" in stripped:
            found, i = events_table(lines, i)
            events.extend(found)
            continue
        key = _KEY.match(row)
        if not key:
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
        name=top.get("Name") or None, namespace=top.get("Namespace") or None,
        node=None if node_name in (None, "<none>") else node_name, status=top.get("Status") or None,
        reason=top.get("Reason") or None, message=top.get("Message") or None, containers=tuple(containers),
        events=tuple(events), line=lines[0][0] if lines else 0,
    )  # fmt: skip
