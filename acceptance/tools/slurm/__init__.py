"""Slurm's command output: ``scontrol show node``, ``sinfo``, ``squeue``, ``sacct``, srun/slurmstepd lines
and daemon logs. Pure: text in, frozen records out; the query argv our own code runs lives beside its parser.

A paste may carry a consistent quote/comment/indent prefix, CRLF line ends, shell prompt lines and trailing
blanks; none of them changes a fact. A line that cannot be read is a `Problem` with its line number; text
with nothing recognisable raises `acceptance.errors.ParseError`.
"""

from __future__ import annotations

from acceptance.tools.slurm.events import parse_log, step_events
from acceptance.tools.slurm.history import EVENT_FIELDS, event_query, node_changes, parse_events
from acceptance.tools.slurm.job import parse_records
from acceptance.tools.slurm.model import (
    AcctRow,
    Gres,
    Job,
    LogLine,
    Node,
    NodeChange,
    NodeSet,
    NodeState,
    Problem,
    Reservation,
    Row,
    StepEvent,
    Table,
)
from acceptance.tools.slurm.reservation import parse_reservations, reservation_query
from acceptance.tools.slurm.sacct import ACCT_FIELDS, acct_query, parse_sacct
from acceptance.tools.slurm.scontrol import parse_nodes
from acceptance.tools.slurm.sinfo import NODE_FORMAT, node_query, nodes, parse_sinfo
from acceptance.tools.slurm.squeue import JOB_FORMAT, jobs, parse_squeue, parse_squeue_json
from acceptance.tools.slurm.state import gres, hostlist, node_state

__all__ = ["ACCT_FIELDS", "EVENT_FIELDS", "JOB_FORMAT", "NODE_FORMAT", "AcctRow", "Gres", "Job", "LogLine", "Node",
           "NodeChange", "NodeSet", "NodeState", "Problem", "Reservation", "Row", "StepEvent", "Table", "acct_query",
           "event_query", "gres", "hostlist", "jobs", "node_changes", "node_query", "node_state", "nodes",
           "parse_events", "parse_log", "parse_nodes", "parse_records", "parse_reservations", "parse_sacct",
           "parse_sinfo", "parse_squeue", "parse_squeue_json", "reservation_query", "step_events"]  # fmt: skip
