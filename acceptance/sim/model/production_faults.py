"""Recurrence faults of the simulated production period after an acceptance (criterion 5).

Written like the acceptance faults, with the time from the window's start (and a duration)::

    KIND[@NODE[:GPU]]@OFFSET[+DURATION]

    xid-recur@sim-node-07:3@6h           an XID (79, GPU fallen off the bus) 6 h in; the job hangs and dies
    slowdown-recur@2h+20m                the job 12% slower for 20 min (@NODE:GPU: that GPU's clocks
                                         report a HW thermal slowdown meanwhile)
    pcie-replay-recur@sim-node-04@9h+10m PCIe replays at 40/min on a GPU for 10 min
    scrape-gap@sim-node-07@2h+45m        no samples from the node for 45 min (no node: from anything)
    node-notready-recur@sim-node-07@3h+5m the node NotReady for 5 min

They are given with ``--sim-fault`` like the others, in the same grammar (`acceptance.sim.model.faultspec`);
the acceptance-time simulator leaves them to criterion 5's simulated probation.
"""

from __future__ import annotations

from dataclasses import dataclass

# kind -> (default duration in seconds, needs a node, one-line meaning)
KINDS: dict[str, tuple[float, bool, str]] = {
    "xid-recur": (0.0, False, "an XID on a GPU (79: fallen off the bus); the job hangs, the watchdog fires"),
    "slowdown-recur": (20 * 60.0, False, "the job 12% slower (a GPU's thermal slowdown with @NODE:GPU)"),
    "pcie-replay-recur": (10 * 60.0, False, "PCIe replays on a GPU at 40 per minute"),
    "scrape-gap": (45 * 60.0, False, "no samples from a node (from anything without @NODE)"),
    "node-notready-recur": (5 * 60.0, True, "the node NotReady"),
}


@dataclass(frozen=True)
class RecurrenceFault:
    """One fault of the production period, `offset_s` after the window's start, lasting `duration_s`."""

    kind: str
    node: str | None
    gpu: int | None
    offset_s: float
    duration_s: float
    text: str

    def __str__(self) -> str:
        return self.text

    def during(self, seconds: float) -> bool:
        return self.offset_s <= seconds < self.offset_s + max(self.duration_s, 0.0)
