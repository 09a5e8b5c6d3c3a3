"""``scontrol show node`` in both forms: multi-line records (continuation lines indented) and ``-o``.

Keys are split at a blank followed by ``Key=``; ``Reason=`` runs to its ``[user@time]`` stamp (its text may
hold blanks, ``=``, ``<``, ``>``, ``@``, ``#``), ``OS=`` values hold blanks. Elision tokens (``...``) of a
paste are removed. A non-blank line outside a record is reported as a problem with its number.
"""

from __future__ import annotations

import re

from acceptance.errors import ParseError
from acceptance.tools.slurm.model import Node, NodeSet, Problem
from acceptance.tools.slurm.state import gres, node_state
from acceptance.tools.slurm.text import numbered, prompt

_KEY = re.compile(r"(?:^|(?<=\s))([A-Za-z][A-Za-z0-9_/:]*)=")
_REASON = re.compile(
    r"(?:^|(?<=\s))Reason=(?P<reason>.*?)\s*\[(?P<user>[^\[\]@\s]+)@(?P<time>\d{4}-\d\d-\d\dT[\d:]+)\]"
)
_ELISION = re.compile(r"(?:^|\s)(?:\.\.\.|\[\.\.\.\])(?=\s|$)")


def fields_of(text: str) -> dict[str, str]:
    """``Key=value`` pairs of one record's text (``Reason=`` up to its ``[user@time]`` stamp)."""
    out: dict[str, str] = {}
    reason = _REASON.search(text)
    if reason:
        out["Reason"] = f"{reason.group('reason')} [{reason.group('user')}@{reason.group('time')}]"
        text = text[: reason.start()] + " " + text[reason.end() :]
    keys = list(_KEY.finditer(text))
    for k, match in enumerate(keys):
        end = keys[k + 1].start() if k + 1 < len(keys) else len(text)
        out.setdefault(match.group(1), text[match.end() : end].strip())
    return out


def _node(block: list[tuple[int, str]], source: str, problems: list[Problem]) -> Node:
    number = block[0][0]
    text = " ".join(_ELISION.sub(" ", row) for _, row in block)
    fields = fields_of(text)
    name = fields.get("NodeName", "")
    state_text = fields.get("State", "")
    state = node_state(state_text) if state_text else None
    if state is None:
        where = next((n for n, row in block if "State=" in row), number)
        if state_text:
            raise ParseError(source, where, state_text, "a node state such as IDLE, MIXED+DRAIN or DOWN+NOT_RESPONDING")
        problems.append(Problem(number, f"NodeName={name}", "a State= field (the paste elides it)"))
        state = node_state("UNKNOWN")
        assert state is not None
    found = gres(fields.get("Gres", ""))
    if found is None:
        where = next((n for n, row in block if "Gres=" in row), number)
        raise ParseError(source, where, fields.get("Gres", ""), "Gres=NAME[:TYPE]:COUNT[(S:...)],...")
    reason = user = when = None
    match = _REASON.search(text)
    if match:
        reason, user, when = match.group("reason").strip(), match.group("user"), match.group("time")
    elif "Reason" in fields:
        reason = fields["Reason"] or None
    partitions = tuple(p for p in fields.get("Partitions", "").split(",") if p and p != "(null)")
    return Node(name, state, reason, user, when, found, partitions, fields, number)


def parse_nodes(text: str, source: str = "<text>") -> NodeSet:
    """Every node record of ``scontrol show node [-o]`` output; ParseError when there is none."""
    nodes: list[Node] = []
    problems: list[Problem] = []
    block: list[tuple[int, str]] = []
    for number, row in numbered(text):
        stripped = row.strip()
        if stripped.startswith("NodeName="):
            if block:
                nodes.append(_node(block, source, problems))
            block = [(number, stripped)]
        elif block and stripped and (row[:1].isspace() or stripped.startswith(("...", "[...]"))):
            block.append((number, stripped))
        elif not stripped:
            continue
        else:
            if block:
                nodes.append(_node(block, source, problems))
                block = []
            if prompt(row) is None:
                problems.append(Problem(number, row, "a NodeName= record or one of its indented lines"))
    if block:
        nodes.append(_node(block, source, problems))
    if not nodes:
        first = next(((n, row) for n, row in numbered(text) if row.strip()), (0, ""))
        raise ParseError(source, first[0], first[1], "scontrol show node output (NodeName=... records)")
    return NodeSet(tuple(nodes), tuple(problems))
