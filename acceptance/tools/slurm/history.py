"""What Slurm recorded about nodes over time: slurmctld's log lines of node state changes and of jobs a node
failure ended, and ``sacctmgr show event`` rows (node events kept by slurmdbd).

slurmctld (22.05) says, at its default level: ``update_node: node N reason set to: R`` then ``update_node:
node N state set to DRAINED`` (an admin or a health check), ``error: Nodes N[hostlist] not responding`` and
``... not responding, setting DOWN``, ``Node N now responding``, ``node N returned to service``, ``requeue job
JobId=J due to failure of node N`` and ``Killing JobId=J on failed node N``. Times stay as printed (the
controller's local time); the caller knows the zone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from acceptance.tools.slurm.model import LogLine, NodeChange, Problem
from acceptance.tools.slurm.state import hostlist
from acceptance.tools.slurm.table import delimited
from acceptance.tools.slurm.text import numbered

_REASON = re.compile(r"^update_node: node (?P<node>\S+) reason set to: (?P<reason>.*)$")
_STATE = re.compile(r"^update_node: node (?P<node>\S+) state set to (?P<state>[A-Z_+]+)")
_NOT_RESPONDING = re.compile(r"^Nodes? (?P<nodes>\S+) not responding(?P<down>, setting DOWN)?")
_RESPONDING = re.compile(r"^Node (?P<node>\S+) now responding")
_RETURNED = re.compile(r"^node (?P<node>\S+) returned to service")
_REQUEUE = re.compile(r"^requeue job JobId=(?P<job>\S+) due to failure of node (?P<node>\S+)")
_KILLED = re.compile(r"^Killing JobId=(?P<job>\S+) on failed node (?P<node>\S+)")
_BAD_STATES = ("DOWN", "DRAIN", "DRAINED", "DRAINING", "FAIL", "FAILING", "MAINT", "POWER_DOWN", "REBOOT")

# Our query of slurmdbd's node events: no header, '|', the reason last but one (user names hold no '|').
EVENT_FIELDS = ("NodeName", "Start", "End", "State", "Reason", "User")


def node_changes(lines: Sequence[LogLine]) -> tuple[NodeChange, ...]:
    """Node state changes in slurmctld log lines, oldest first (a reason joins the state change it precedes)."""
    out: list[NodeChange] = []
    reasons: dict[str, str] = {}
    for line in lines:
        text = line.text.strip()
        if m := _REASON.match(text):
            reasons[m.group("node")] = m.group("reason").strip()
        elif m := _STATE.match(text):
            node, state = m.group("node"), m.group("state")
            bad = any(part in _BAD_STATES for part in state.split("+"))
            out.append(NodeChange(line.time, node, "down" if bad else "up", state, reasons.pop(node, None) if bad
                                  else None, text=text, line=line.line))  # fmt: skip
        elif m := _NOT_RESPONDING.match(text):
            state = "DOWN" if m.group("down") else "NOT_RESPONDING"
            for node in hostlist(m.group("nodes")):
                out.append(NodeChange(line.time, node, "down", state, "not responding", text=text, line=line.line))
        elif m := _RESPONDING.match(text):
            out.append(NodeChange(line.time, m.group("node"), "up", "RESPONDING", text=text, line=line.line))
        elif m := _RETURNED.match(text):
            out.append(NodeChange(line.time, m.group("node"), "up", "RETURNED", text=text, line=line.line))
        elif (m := _REQUEUE.match(text)) or (m := _KILLED.match(text)):
            how = "requeued" if text.startswith("requeue") else "killed"
            out.append(NodeChange(line.time, m.group("node"), "job_node_fail", "NODE_FAIL",
                                  f"job {m.group('job')} {how}: node {m.group('node')} failed", m.group("job"),
                                  text, line.line))  # fmt: skip
    return tuple(out)


def event_query(nodes: Sequence[str], start: str) -> list[str]:
    """argv of slurmdbd's node events of `nodes` since `start` (``YYYY-MM-DDTHH:MM:SS``, the controller's time)."""
    return ["sacctmgr", "--noheader", "--parsable2", "show", "event", f"Nodes={','.join(nodes)}", f"Start={start}",
            "End=now", f"Format={','.join(EVENT_FIELDS)}"]  # fmt: skip


def parse_events(text: str) -> tuple[tuple[NodeChange, ...], tuple[Problem, ...]]:
    """Rows of `event_query` (``NodeName|Start|End|State|Reason|User``): each node event is a ``down`` change
    at its start (`reason` with who set it; `until` its end, ``Unknown`` while it lasts). Cluster events (no
    node name) are left out."""
    body = [(n, row) for n, row in numbered(text) if row.strip()]
    rows, problems = delimited([f.upper() for f in EVENT_FIELDS], body, "|")
    out = []
    for row in rows:
        node = row.get("NODENAME")
        if not node:
            continue
        user = row.get("USER")
        reason = row.get("REASON") or None
        end = row.get("END")
        out.append(NodeChange(row.get("START"), node, "down", row.get("STATE"), reason, user=user or None,
                              until=None if end in ("", "Unknown") else end, line=row.line))  # fmt: skip
    return tuple(out), tuple(problems)
