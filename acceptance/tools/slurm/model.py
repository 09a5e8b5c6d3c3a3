"""Records read from Slurm's command output: node states, nodes, table rows, accounting rows, step events."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Problem:
    """A line that could not be read (prose in a paste, an elided fragment, a row that does not fit)."""

    line: int
    text: str
    expected: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "text": self.text, "expected": self.expected}


@dataclass(frozen=True)
class NodeState:
    """``BASE[+FLAG...]`` as scontrol prints it, or sinfo's word with its suffix characters mapped to flags.

    `base` is upper case (``IDLE``, ``MIXED``, ``ALLOCATED``, ``DOWN``, ``DRAINED``, ``DRAINING``, ``FAIL``,
    ``MAINT`` ...); `flags` are scontrol's flag names (``DRAIN``, ``NOT_RESPONDING``, ``REBOOT_REQUESTED`` ...).
    """

    base: str
    flags: tuple[str, ...] = ()
    raw: str = ""

    @property
    def drained(self) -> bool:
        """Drained or draining: an admin or a health check took the node out of scheduling."""
        return "DRAIN" in self.flags or self.base in ("DRAINED", "DRAINING", "DRAIN")

    @property
    def down(self) -> bool:
        return self.base in ("DOWN", "FAIL", "FAILING") or "FAIL" in self.flags

    @property
    def not_responding(self) -> bool:
        return "NOT_RESPONDING" in self.flags

    @property
    def usable(self) -> bool:
        """Schedulable and answering: IDLE, MIXED, ALLOCATED or COMPLETING without a bad flag."""
        bad = {"DRAIN", "NOT_RESPONDING", "FAIL", "MAINT", "REBOOT_REQUESTED", "REBOOT_ISSUED", "POWERED_DOWN",
               "POWERING_DOWN", "POWERING_UP", "POWER_DOWN", "INVALID_REG", "PLANNED"}  # fmt: skip
        return self.base in ("IDLE", "MIXED", "ALLOCATED", "COMPLETING") and not bad.intersection(self.flags)

    def __str__(self) -> str:
        return "+".join((self.base, *self.flags))


@dataclass(frozen=True)
class Gres:
    """One generic resource of a node: ``gpu:h200:8(S:0-1)`` is name gpu, type h200, count 8, sockets 0-1."""

    name: str
    type: str | None
    count: int
    sockets: str | None = None

    def __str__(self) -> str:
        return ":".join(x for x in (self.name, self.type, str(self.count)) if x is not None)


@dataclass(frozen=True)
class Node:
    """One node record of ``scontrol show node`` (multi-line or ``-o``)."""

    name: str
    state: NodeState
    reason: str | None = None
    reason_user: str | None = None
    reason_time: str | None = None
    gres: tuple[Gres, ...] = ()
    partitions: tuple[str, ...] = ()
    fields: Mapping[str, str] = field(default_factory=dict)
    line: int = 0

    @property
    def gpus(self) -> int:
        return sum(g.count for g in self.gres if g.name == "gpu")

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "state": str(self.state), "base": self.state.base, "flags": list(self.state.flags),
                "reason": self.reason, "reason_user": self.reason_user, "reason_time": self.reason_time,
                "gres": [str(g) for g in self.gres], "gpus": self.gpus, "partitions": list(self.partitions),
                "line": self.line}  # fmt: skip


@dataclass(frozen=True)
class Row:
    """One row of a table (sinfo, squeue, sacct): cells by header name (upper case, as Slurm prints it)."""

    cells: Mapping[str, str]
    line: int = 0

    def get(self, name: str, default: str = "") -> str:
        return self.cells.get(name.upper(), default)


@dataclass(frozen=True)
class Table:
    """Rows of one command's output, with the lines that could not be read and the shell command if pasted."""

    columns: tuple[str, ...]
    rows: tuple[Row, ...]
    problems: tuple[Problem, ...] = ()
    command: str = ""


@dataclass(frozen=True)
class Job:
    """One job of squeue (custom format or ``--json``)."""

    job_id: str
    name: str = ""
    state: str = ""
    comment: str = ""
    user: str = ""
    nodes: str = ""
    reason: str = ""
    line: int = 0


@dataclass(frozen=True)
class AcctRow:
    """One row of sacct: a job (`step` None) or one of its steps (``batch``, ``extern``, ``0`` ...).

    `state` is the base state (``CANCELLED``), `cancelled_by` the uid of ``CANCELLED by 10304007``;
    `exit_code`/`signal` from ``ExitCode=2:0`` when that column was asked for.
    """

    job_id: str
    step: str | None
    state: str
    cancelled_by: str | None = None
    exit_code: int | None = None
    signal: int | None = None
    cells: Mapping[str, str] = field(default_factory=dict)
    line: int = 0

    def get(self, name: str, default: str = "") -> str:
        return self.cells.get(name.upper(), default)


@dataclass(frozen=True)
class StepEvent:
    """An srun/slurmstepd/slurmd line that says how a job or step ended or failed.

    `kind`: ``node_failure`` (srun names a failed node), ``step_aborted`` (srun waits for the step),
    ``cancelled`` (slurmstepd: JOB or STEP cancelled, `cause` ``TIME LIMIT``, ``NODE FAILURE``,
    ``PREEMPTION`` ..., None for a plain scancel), ``stepd_terminated`` (job not ending with signals),
    ``task_exit`` (srun: a task exited with a code or was killed).
    """

    kind: str
    line: int
    job_id: str | None = None
    step: str | None = None
    node: str | None = None
    time: str | None = None
    cause: str | None = None
    exit_code: int | None = None
    text: str = ""


@dataclass(frozen=True)
class LogLine:
    """One line of a slurmd/slurmctld log (``[ISO] [step] error: text``) or of a journald view of one."""

    line: int
    time: str
    text: str
    level: str | None = None
    step: str | None = None
    ident: str | None = None


@dataclass(frozen=True)
class NodeChange:
    """One change of a node's state that Slurm recorded (a slurmctld log line, a slurmdbd node event).

    `kind`: ``down`` (drained, down, not responding), ``up`` (back: responding, returned to service, a
    state without DRAIN/DOWN), ``job_node_fail`` (a job requeued or killed because the node failed: `job`).
    `time` (and `until`, a slurmdbd event's end) as Slurm printed it, in the controller's local time.
    """

    time: str
    node: str
    kind: str
    state: str
    reason: str | None = None
    job: str | None = None
    text: str = ""
    line: int = 0
    user: str | None = None
    until: str | None = None


@dataclass(frozen=True)
class Reservation:
    """One record of ``scontrol show reservation``: its nodes (hostlist expanded), flags, window and who may use it.

    `state` is ``ACTIVE`` or ``INACTIVE`` (not started yet); `start`/`end` are as printed (the controller's
    local time, no zone); `duration` as printed (``02:00:00``, ``UNLIMITED``).
    """

    name: str
    state: str
    start: str | None
    end: str | None
    duration: str | None
    nodes: tuple[str, ...]
    flags: tuple[str, ...] = ()
    users: tuple[str, ...] = ()
    accounts: tuple[str, ...] = ()
    partition: str | None = None
    fields: Mapping[str, str] = field(default_factory=dict)
    line: int = 0

    @property
    def window(self) -> str:
        """``START to END (DURATION)`` as Slurm printed them."""
        span = f"{self.start or '?'} to {self.end or '?'}"
        return f"{span} ({self.duration})" if self.duration else span

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "state": self.state, "start": self.start, "end": self.end,
                "duration": self.duration, "nodes": list(self.nodes), "flags": list(self.flags),
                "users": list(self.users), "accounts": list(self.accounts), "partition": self.partition,
                "line": self.line}  # fmt: skip


@dataclass(frozen=True)
class NodeSet:
    """Nodes read from one ``scontrol show node`` output, with the lines that could not be read."""

    nodes: tuple[Node, ...]
    problems: tuple[Problem, ...] = ()

    def by_name(self) -> dict[str, Node]:
        return {n.name: n for n in self.nodes}
