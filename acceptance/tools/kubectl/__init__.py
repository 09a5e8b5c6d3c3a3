"""kubectl's human output as people paste it: ``describe node|pod``, events tables, ``get nodes|pods``.

The paste is first made back into kubectl's lines (`paste`: CRLF, a prefix on every line such as
``> `` or indentation, trailing blanks, fences, ``...`` elisions), then cut at its shell command lines
(`command`: ``$ kubectl …`` and other prompts). Each command's output is read by its shape, so the
text around a table and the command may be missing: describe blocks from ``Name:`` (the node named on
the command line when that line is absent), Conditions rows with or without their header and
``Conditions:`` heading, blank- or TAB-padded (`describe`); events tables of every generation and
event rows without their header (`events`); node and pod tables (`listing`). Ages stay relative as
printed. For conditions, ``Unknown`` is always bad, ``Ready`` must be ``True`` and every other type
(pressure conditions, node-problem-detector's) ``False``; a paste without a Ready row says so
(`READY_NOT_IN_PASTE`), it does not count as Ready.

The façade of `acceptance.tools.kubectl`. Pure: text in, `KubectlText` out; text that is no
kubectl output gives an empty result (`recognised` False).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from acceptance.tools.kubectl import command, describe, events, listing, paste
from acceptance.tools.kubectl.command import Command
from acceptance.tools.kubectl.model import (
    READY_NOT_IN_PASTE,
    Condition,
    ContainerState,
    Event,
    KubectlText,
    NodeDescription,
    NodeRow,
    PodDescription,
    PodRow,
)

__all__ = ["READY_NOT_IN_PASTE", "Condition", "ContainerState", "Event", "KubectlText", "NodeDescription",
           "NodeRow", "PodDescription", "PodRow", "may_recognise", "parse"]  # fmt: skip

_NODE_HINTS = ("Roles:", "Taints:", "System Info:", "Kubelet Version", "ProviderID:", "Non-terminated Pods:",
               "Unschedulable:", "Lease:")  # fmt: skip
_NODE_SECTIONS = ("Roles:", "Labels:", "Taints:", "Unschedulable:", "Lease:", "Conditions:", "Addresses:",
                  "Capacity:", "Allocatable:", "System Info:", "Events:")  # fmt: skip
Lines = list[tuple[int, str]]
# Every way `parse` recognises something needs one of these in the text (undoing the paste only strips
# lines at their ends, so it makes none appear): a command line (`kubectl`), a Conditions header
# (`LastHeartbeatTime`), a describe block (`Name:`), a pod's status message (`Message:`) or an events header
# (its MESSAGE or Message column), a node or pod table header (`NAME`), an event row (`Normal`/`Warning`),
# a Conditions row (True/False/Unknown, followed by RFC 1123 times, see `_CONDITION_TIME`).
_LITERALS = ("kubectl", "LastHeartbeatTime", "Name:", "Message", "MESSAGE", "NAME", "Normal", "Warning")
_STATUS_WORDS = ("True", "False", "Unknown")
_CONDITION_TIME = re.compile(r"(?:True|False|Unknown)\s+[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} ")


@dataclass
class _Found:
    nodes: list[NodeDescription] = field(default_factory=list)
    pods: list[PodDescription] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    node_rows: list[NodeRow] = field(default_factory=list)
    pod_rows: list[PodRow] = field(default_factory=list)
    unread: list[int] = field(default_factory=list)


def _segments(lines: tuple[tuple[int, str], ...]) -> list[tuple[Command | None, Lines]]:
    """(command, numbered lines) per shell command in the paste; the lines before the first command have None."""
    out: list[tuple[Command | None, Lines]] = [(None, [])]
    for number, line in lines:
        cmd = command.parse(line)
        if cmd is not None:
            out.append((cmd, []))
            continue
        out[-1][1].append((number, line))
    return [(cmd, rows) for cmd, rows in out if rows]


def _is_node(cmd: Command | None, rows: Lines) -> bool:
    """Part of a describe node output: Conditions rows, or a describe node command with some of its sections
    (not its error message: ``Error from server (NotFound)`` describes no node)."""
    if any(describe.is_conditions_header(r) or describe.is_condition_row(r) for _, r in rows):
        return True
    described = cmd is not None and cmd.verb == "describe" and cmd.resource == "node"
    return described and any(r.startswith(_NODE_SECTIONS) for _, r in rows)


def _listings(cmd: Command | None, rows: Lines, found: _Found) -> None:
    """Tables outside describe blocks, and the event or pod rows pasted without their header."""
    get_pods = cmd is not None and cmd.verb == "get" and cmd.resource == "pod"
    i = 0
    while i < len(rows):
        number, row = rows[i]
        if events.is_header(row):
            evs, i, cut = events.table(rows, i)
            found.events.extend(evs)
            found.unread.extend(cut)
            continue
        if listing.is_nodes_header(row):
            node_rows, i = listing.nodes(rows, i)
            found.node_rows.extend(node_rows)
            continue
        if listing.is_pods_header(row):
            pod_rows, i = listing.pods(rows, i)
            found.pod_rows.extend(pod_rows)
            continue
        event = events.row(number, row)
        pod_row = listing.pod_row(number, row) if get_pods and event is None else None
        if event is not None:
            found.events.append(event)
        elif pod_row is not None:
            found.pod_rows.append(pod_row)
        i += 1


def _segment(cmd: Command | None, rows: Lines, found: _Found) -> None:
    starts = [i for i, (_, row) in enumerate(rows) if row.startswith("Name:")]
    pod_name = cmd.names[0] if cmd and cmd.verb == "describe" and cmd.resource == "pod" and cmd.names else None
    if not starts:
        if _is_node(cmd, rows):
            found.nodes.append(describe.node(rows, cmd.node_name if cmd else None))
        elif any(describe.is_pod_message(r) for _, r in rows) or (
            pod_name and any(events.is_header(r) or events.row(n, r) for n, r in rows)
        ):
            found.pods.append(describe.pod(rows, pod_name))
        else:
            _listings(cmd, rows, found)
        return
    _listings(cmd, rows[: starts[0]], found)
    for k, start in enumerate(starts):
        block = rows[start : starts[k + 1] if k + 1 < len(starts) else len(rows)]
        body = "\n".join(row for _, row in block)
        if (cmd is not None and cmd.verb == "describe" and cmd.resource == "node") or any(
            hint in body for hint in _NODE_HINTS
        ):
            found.nodes.append(describe.node(block))
        elif (cmd is not None and cmd.resource == "pod") or "Containers:" in body or "Controlled By:" in body:
            found.pods.append(describe.pod(block))


def may_recognise(text: str) -> bool:
    """False when `parse(text)` can recognise nothing (`recognised` False): the text holds none of the
    literals that every node or pod description, event or table row needs. A cheap test (substring searches)
    that spares the line-by-line reading of long logs that hold no kubectl output."""
    if any(word in text for word in _LITERALS):
        return True
    return any(word in text for word in _STATUS_WORDS) and _CONDITION_TIME.search(text) is not None


def parse(text: str, source: str = "<text>") -> KubectlText:
    """Node and pod descriptions, event rows, node and pod rows found in a paste of kubectl output."""
    read = paste.read(text)
    found = _Found()
    for cmd, rows in _segments(read.lines):
        _segment(cmd, rows, found)
    unread = [*found.unread, *(n for d in found.nodes for n in d.unread), *(n for p in found.pods for n in p.unread)]
    return KubectlText(source, tuple(found.nodes), tuple(found.pods), tuple(found.events), tuple(found.node_rows),
                       tuple(found.pod_rows), read.elided, tuple(sorted(unread)))  # fmt: skip
