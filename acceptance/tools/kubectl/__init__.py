"""kubectl's human output: ``describe node|pod``, ``kubectl events``, ``get nodes`` (shapes of
``../shared/corpus-wave2/kubectl/``, README §3).

Tables are split on the header's column offsets (aggregated ages such as ``5m53s (x4 over 6m38s)``
and empty label columns hold spaces); a paste may hold several commands with shell prompts
(``controlplane $ ``, ``% ``, ``C:\\...>``) and failed commands between them. For conditions,
``Unknown`` is always bad, ``Ready`` must be ``True`` and every other type (pressure conditions,
node-problem-detector's) ``False``.

The façade of `acceptance.tools.kubectl`. Pure: text in, `KubectlText` out; text that is no
kubectl output gives an empty result (`recognised` False).
"""

from __future__ import annotations

import re

from acceptance.tools.kubectl import describe
from acceptance.tools.kubectl.model import (
    Condition,
    ContainerState,
    Event,
    KubectlText,
    NodeDescription,
    NodeRow,
    PodDescription,
)
from acceptance.tools.kubectl.table import columns, split_row

__all__ = ["Condition", "ContainerState", "Event", "KubectlText", "NodeDescription", "NodeRow", "PodDescription",
           "parse"]  # fmt: skip

_PROMPT = re.compile(r"^(?:[\w.@-]+ )?[$%#] (.*)$|^[A-Za-z]:\\[^>]*>(.*)$")
_EVENTS_HEADER = re.compile(r"^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE")
_NODES_HEADER = re.compile(r"^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION")
_NODE_HINTS = ("Roles:", "Taints:", "System Info:", "Kubelet Version", "ProviderID:", "Non-terminated Pods:")


def _segments(text: str) -> list[tuple[str, list[tuple[int, str]]]]:
    """(command, numbered lines) per shell command in the paste (one segment when there are no prompts)."""
    out: list[tuple[str, list[tuple[int, str]]]] = [("", [])]
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip("\r\n")
        prompt = _PROMPT.match(line)
        if (prompt and "kubectl" in line) or (prompt and not (prompt.group(1) or prompt.group(2) or "").strip()):
            out.append(((prompt.group(1) or prompt.group(2) or "").strip(), []))
            continue
        out[-1][1].append((number, line))
    return [(cmd, lines) for cmd, lines in out if lines]


def _describes(command: str, lines: list[tuple[int, str]]) -> tuple[list[NodeDescription], list[PodDescription]]:
    starts = [i for i, (_, row) in enumerate(lines) if row.startswith("Name:")]
    nodes: list[NodeDescription] = []
    pods: list[PodDescription] = []
    if not starts:
        if any(row.strip() == "Conditions:" for _, row in lines) and any(
            "LastHeartbeatTime" in row for _, row in lines
        ):
            nodes.append(describe.node(lines))
        return nodes, pods
    for k, start in enumerate(starts):
        block = lines[start : starts[k + 1] if k + 1 < len(starts) else len(lines)]
        body = "\n".join(row for _, row in block)
        if "describe node" in command or any(hint in body for hint in _NODE_HINTS):
            nodes.append(describe.node(block))
        elif "describe pod" in command or "Containers:" in body or "Controlled By:" in body:
            pods.append(describe.pod(block))
    return nodes, pods


def _node_rows(lines: list[tuple[int, str]], start: int) -> list[NodeRow]:
    cols = columns(lines[start][1])
    fixed = {"NAME", "STATUS", "ROLES", "AGE", "VERSION"}
    rows: list[NodeRow] = []
    for number, row in lines[start + 1 :]:
        if not row.strip():
            break
        cells = split_row(row, cols)
        labels = {k.lower(): v for k, v in cells.items() if k not in fixed and v}
        rows.append(NodeRow(cells["NAME"], cells["STATUS"], cells["ROLES"], cells["AGE"], cells["VERSION"], labels,
                            number))  # fmt: skip
    return rows


def parse(text: str, source: str = "<text>") -> KubectlText:
    """Node and pod descriptions, event rows and node rows found in a paste of kubectl output."""
    nodes: list[NodeDescription] = []
    pods: list[PodDescription] = []
    events: list[Event] = []
    node_rows: list[NodeRow] = []
    for command, lines in _segments(text):
        found_nodes, found_pods = _describes(command, lines)
        nodes.extend(found_nodes)
        pods.extend(found_pods)
        for i, (_, row) in enumerate(lines):
            if _EVENTS_HEADER.match(row):
                found, _ = describe.events_table(lines, i)
                events.extend(found)
            elif _NODES_HEADER.match(row):
                node_rows.extend(_node_rows(lines, i))
    return KubectlText(source, tuple(nodes), tuple(pods), tuple(events), tuple(node_rows))
