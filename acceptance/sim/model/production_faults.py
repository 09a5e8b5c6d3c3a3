"""Recurrence faults of the simulated production period after an acceptance (criterion 5).

Written like the acceptance faults, with the time from the window's start (and a duration)::

    KIND[@NODE[:GPU]]@OFFSET[+DURATION]

    xid-recur@sim-node-07:3@6h           an XID (79, GPU fallen off the bus) 6 h in; the job hangs and dies
    slowdown-recur@2h+20m                the job 12% slower for 20 min (@NODE:GPU: that GPU's clocks
                                         report a HW thermal slowdown meanwhile)
    pcie-replay-recur@sim-node-04@9h+10m PCIe replays at 40/min on a GPU for 10 min
    scrape-gap@sim-node-07@2h+45m        no samples from the node for 45 min (no node: from anything)
    node-notready-recur@sim-node-07@3h+5m the node NotReady for 5 min

They are given with ``--sim-fault`` like the others; the acceptance-time simulator ignores them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from acceptance.errors import UsageError
from acceptance.units import parse_duration

# kind -> (default duration in seconds, needs a node, one-line meaning)
KINDS: dict[str, tuple[float, bool, str]] = {
    "xid-recur": (0.0, False, "an XID on a GPU (79: fallen off the bus); the job hangs, the watchdog fires"),
    "slowdown-recur": (20 * 60.0, False, "the job 12% slower (a GPU's thermal slowdown with @NODE:GPU)"),
    "pcie-replay-recur": (10 * 60.0, False, "PCIe replays on a GPU at 40 per minute"),
    "scrape-gap": (45 * 60.0, False, "no samples from a node (from anything without @NODE)"),
    "node-notready-recur": (5 * 60.0, True, "the node NotReady"),
}
FORM = "KIND[@NODE[:GPU]]@OFFSET[+DURATION], e.g. xid-recur@sim-node-07:3@6h or slowdown-recur@2h+20m"


@dataclass(frozen=True)
class RecurrenceFault:
    """One fault of the production period, `offset_s` after the window's start, lasting `duration_s`."""

    kind: str
    node: str | None
    gpu: int | None
    offset_s: float
    duration_s: float
    text: str

    def during(self, seconds: float) -> bool:
        return self.offset_s <= seconds < self.offset_s + max(self.duration_s, 0.0)


def is_recurrence_fault(text: str) -> bool:
    """Whether a ``--sim-fault`` value is one of the production period's (not an acceptance-time fault)."""
    return text.strip().partition("@")[0] in KINDS


def _bad(text: str, problem: str, nodes: Sequence[str]) -> UsageError:
    shown = f"{nodes[0]} ... {nodes[-1]}" if nodes else "none"
    return UsageError(
        f"bad recurrence fault {text!r}: {problem}. Form: {FORM}; kinds: {', '.join(KINDS)}; nodes: {shown}"
    )


def parse_recurrence_fault(text: str, nodes: Sequence[str], gpus_per_node: int = 8) -> RecurrenceFault:
    parts = text.strip().split("@")
    kind = parts[0]
    if kind not in KINDS:
        raise _bad(text, f"unknown kind {kind!r}", nodes)
    if len(parts) not in (2, 3):
        raise _bad(text, "expected an offset after the last '@'", nodes)
    default_duration, needs_node, _ = KINDS[kind]
    node, gpu = None, None
    if len(parts) == 3:
        node, _, gpu_text = parts[1].partition(":")
        if node not in nodes:
            raise _bad(text, f"unknown node {node!r}", nodes)
        if gpu_text:
            if not gpu_text.isdigit() or not 0 <= int(gpu_text) < gpus_per_node:
                raise _bad(text, f"bad GPU {gpu_text!r} (0..{gpus_per_node - 1})", nodes)
            gpu = int(gpu_text)
    elif needs_node:
        raise _bad(text, f"{kind} needs a node", nodes)
    offset_text, plus, duration_text = parts[-1].partition("+")
    try:
        offset = parse_duration(offset_text, allow_zero=True)
        duration = parse_duration(duration_text) if plus else default_duration
    except ValueError as exc:
        raise _bad(text, str(exc), nodes) from None
    return RecurrenceFault(kind, node, gpu, offset, duration, text.strip())


def parse_recurrence_faults(
    texts: Iterable[str], nodes: Sequence[str], gpus_per_node: int = 8
) -> tuple[RecurrenceFault, ...]:
    """The production period's faults among ``--sim-fault`` values (the others are left to the acceptance)."""
    return tuple(parse_recurrence_fault(t, nodes, gpus_per_node) for t in texts if is_recurrence_fault(t))
