"""``sinfo``: the default partition table, ``-N``, ``-R``/``--list-reasons``, ``--Format``/``-O`` and ``-o``.

Without a format the header names the columns (cells cut on its positions, ``-R`` reasons cut to 20 characters
are kept as printed). With ``fmt`` (the ``-o`` string, e.g. ``%N|%T|%E|%G`` with ``-h``) rows are cut on the
format's literal separators. `nodes` turns rows into per-node records (hostlists expanded, states mapped).
"""

from __future__ import annotations

from acceptance.errors import ParseError
from acceptance.tools.slurm.model import Node, Problem, Table
from acceptance.tools.slurm.state import gres, hostlist, node_state
from acceptance.tools.slurm.table import aligned, format_fields, formatted
from acceptance.tools.slurm.text import numbered, prompt

# Header names of sinfo's -o letters (as sinfo prints them).
LETTERS = {
    "a": "AVAIL", "A": "NODES(A/I)", "b": "ACTIVE_FEATURES", "B": "MAX_CPUS_PER_NODE", "c": "CPUS",
    "C": "CPUS(A/I/O/T)", "d": "TMP_DISK", "D": "NODES", "e": "FREE_MEM", "E": "REASON", "f": "AVAIL_FEATURES",
    "F": "NODES(A/I/O/T)", "g": "GROUPS", "G": "GRES", "h": "OVERSUBSCRIBE", "H": "TIMESTAMP", "l": "TIMELIMIT",
    "L": "DEFAULTTIME", "m": "MEMORY", "n": "HOSTNAMES", "N": "NODELIST", "o": "NODE_ADDR", "O": "CPU_LOAD",
    "P": "PARTITION", "R": "PARTITION", "s": "JOB_SIZE", "t": "STATE", "T": "STATE", "u": "USER", "U": "USER",
    "w": "WEIGHT", "X": "SOCKETS", "Y": "CORES", "Z": "THREADS", "z": "S:C:T", "V": "CLUSTER",
}  # fmt: skip
_HEADERS = set(LETTERS.values()) | {"GRES_USED", "STATELONG", "STATECOMPACT", "NODEHOST", "NODEADDR", "PORT",
                                    "VERSION", "RESERVATION", "ROOT", "SOCKETS:CORES:THREADS"}  # fmt: skip

# The query our own code runs: one row per node and partition, the reason last (it may hold the delimiter).
NODE_FORMAT = "%N|%T|%u|%H|%G|%P|%E"


def node_query(nodes: tuple[str, ...] = ()) -> list[str]:
    """argv of the per-node query that `nodes` reads (`NODE_FORMAT`, no header, one row per node)."""
    argv = ["sinfo", "--noheader", "--Node", "--format", NODE_FORMAT]
    return argv + (["--nodes", ",".join(nodes)] if nodes else [])


def _is_header(row: str) -> bool:
    tokens = row.split()
    return bool(tokens) and all(t.upper() in _HEADERS for t in tokens)


def parse_sinfo(text: str, source: str = "<text>", fmt: str | None = None) -> Table:
    """The rows of one sinfo output; ParseError when neither a header nor a row of `fmt` is found."""
    lines = [(n, row) for n, row in numbered(text) if row.strip()]
    command = ""
    body: list[tuple[int, str]] = []
    for number, row in lines:
        cmd = prompt(row)
        if cmd is not None:
            command = cmd
            continue
        body.append((number, row))
    if fmt is not None:
        fields, pattern = format_fields(fmt, LETTERS)
        head = pattern.match(body[0][1]) if body else None
        if head and [c.strip().upper() for c in head.groups()] == fields:
            body = body[1:]
        found, unread = formatted(fields, pattern, body, fmt)
        if not found and body:
            raise ParseError(source, body[0][0], body[0][1], f"sinfo rows of the format {fmt!r}")
        return Table(tuple(fields), tuple(found), tuple(unread), command)
    problems: list[Problem] = []
    for k, (_, row) in enumerate(body):
        if _is_header(row):
            rows, bad = aligned(row, body[k + 1 :])
            problems.extend(bad)
            before = [Problem(n, r, "a sinfo header (PARTITION AVAIL ..., REASON USER ...)") for n, r in body[:k]]
            columns = tuple(t.upper() for t in row.split())
            return Table(columns, tuple(rows), tuple(before + problems), command)
    first = body[0] if body else (0, "")
    raise ParseError(source, first[0], first[1], "a sinfo header line (PARTITION AVAIL TIMELIMIT ..., REASON USER ...)")


def _known(value: str) -> str | None:
    return None if value in ("", "none", "Unknown", "(null)") else value


def nodes(table: Table, source: str = "<text>") -> tuple[Node, ...]:
    """One record per node named by the rows (hostlists expanded); a node in several rows (one per partition)
    gets their partitions merged. ParseError when a STATE or GRES cell is unreadable."""
    found: dict[str, Node] = {}
    for row in table.rows:
        state_text = row.get("STATE")
        state = node_state(state_text or "UNKNOWN")
        if state is None:
            raise ParseError(source, row.line, state_text, "a node state such as idle, drng@, down* or mixed")
        kinds = gres(row.get("GRES"))
        if kinds is None:
            raise ParseError(source, row.line, row.get("GRES"), "GRES as NAME[:TYPE]:COUNT[(S:...)]")
        part = row.get("PARTITION").rstrip("*")
        for name in hostlist(row.get("NODELIST") or row.get("HOSTNAMES")):
            old = found.get(name)
            parts = old.partitions if old else ()
            if part and part not in parts:
                parts = (*parts, part)
            found[name] = Node(name, state, _known(row.get("REASON")), _known(row.get("USER")),
                               _known(row.get("TIMESTAMP")), kinds, parts, dict(row.cells), row.line)  # fmt: skip
    return tuple(found.values())
