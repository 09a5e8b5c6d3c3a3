"""The one grammar of simulated faults: ``--sim-fault``, ``acceptance sim run --fault`` and scenario files.

::

    KIND[@NODE[:INDEX]][@OFFSET[+DURATION]]

    nic-degraded@sim-node-07      gpu-xid@sim-node-03:5      bad-restore         (at acceptance)
    xid-recur@sim-node-07:3@6h    slowdown-recur@2h+20m                          (criterion 5's probation)
    node-drain@sim-node-03        slurmd-down@sim-node-05   node-reserved@sim-node-05  (the simulated Slurm)

The kind decides what the spec becomes: an acceptance-time `Fault` (`faults`), a fault of the
production period after an acceptance, `OFFSET` from the window's start (`RecurrenceFault`, with
``@OFFSET``, required), or a state of the simulated scheduler (`SchedulerFault`). A spec is parsed
once, where it is given, into these objects (`parse_spec`, `SimFaults`); the node it names is
checked against the simulated cluster when a backend opens it (`SimFaults.check`), with the same
message. Each kind says where the simulator shows it (`Kind.shows`): a simulated backend refuses a
fault it cannot show, with the kind's own hint.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from acceptance.errors import UsageError
from acceptance.sim.model import faults as acceptance_faults
from acceptance.sim.model import production_faults
from acceptance.sim.model.cluster import GPUS_PER_NODE, SimCluster
from acceptance.sim.model.faults import BANDWIDTH_FAULTS, DEFAULT_PARAMS, RESTORE_MODES, XID_MODES, Fault
from acceptance.sim.model.production_faults import RecurrenceFault
from acceptance.units import parse_duration

FORM = "KIND[@NODE[:INDEX]][@OFFSET[+DURATION]]"
#: where the simulator shows a fault: in the tools' outputs every simulated backend serves, through the
#: hosts' nvidia-smi (simulated hosts only), in the simulated Slurm's daemons, or in criterion 5's period
SHOWS = ("tools", "nvidia-smi", "slurm", "probation")


@dataclass(frozen=True)
class Kind:
    name: str
    target: str  # "none" | "node" | "any" (a node, or the whole cluster)
    shows: str  # one of SHOWS
    meaning: str
    hint: str = ""  # what to use instead, for a backend that cannot show it


@dataclass(frozen=True)
class SchedulerFault:
    """A state of a node in the simulated Slurm: drained by an admin, or its slurmd stopped."""

    kind: str
    node: str

    def __str__(self) -> str:
        return f"{self.kind}@{self.node}"


SimFault = Fault | RecurrenceFault | SchedulerFault


def _kinds() -> dict[str, Kind]:
    out = {}
    for name, (target, meaning) in acceptance_faults.KINDS.items():
        shows = "nvidia-smi" if name == "gpu-busy" else "tools"
        hint = "a busy GPU shows through nvidia-smi on SSH hosts; use --cluster=sim-ssh" if shows != "tools" else ""
        out[name] = Kind(name, target, shows, meaning, hint)
    for name, (_, needs_node, meaning) in production_faults.KINDS.items():
        out[name] = Kind(name, "node" if needs_node else "any", "probation", meaning)
    drained = "a drained or unresponsive node is a Slurm state; use --cluster=sim-slurm"
    out["node-drain"] = Kind("node-drain", "node", "slurm", "an admin drained the node (Slurm)", drained)
    out["slurmd-down"] = Kind("slurmd-down", "node", "slurm", "the node's slurmd stopped (Slurm)", drained)
    reserved = "a reservation is a Slurm object; use --cluster=sim-slurm"
    out["node-reserved"] = Kind(
        "node-reserved", "node", "slurm", "a MAINT reservation holds the node (Slurm)", reserved
    )
    return out


KINDS: dict[str, Kind] = _kinds()


def kind_of(fault: SimFault) -> Kind:
    return KINDS[fault.kind]


def _nodes_text(nodes: Sequence[str]) -> str:
    return f"; nodes: {len(nodes)} nodes {nodes[0]} ... {nodes[-1]}" if nodes else ""


def bad_fault(text: str, problem: str, nodes: Sequence[str] = ()) -> UsageError:
    """The one message of a bad fault spec: what is wrong, the form, the kinds (and the nodes, once known)."""
    return UsageError(
        f"bad simulated fault {text!r}: {problem}. Form: {FORM} (@OFFSET: criterion 5's faults only); "
        f"kinds: {', '.join(KINDS)}{_nodes_text(nodes)}; INDEX 0..{GPUS_PER_NODE - 1}"
    )


def parse_spec(text: str, params: Mapping[str, Any] | None = None, nodes: Sequence[str] = ()) -> SimFault:
    """``KIND[@NODE[:INDEX]][@OFFSET[+DURATION]]`` -> the fault it names (nodes not checked yet, see `check`).

    `params` (a scenario file's mapping) apply to acceptance-time faults only; `nodes`, when known, are
    listed in the message of a bad spec."""
    spec = text.strip()
    kind_name, *rest = spec.split("@")
    kind = KINDS.get(kind_name)
    if kind is None:
        raise bad_fault(text, f"unknown kind {kind_name!r}", nodes)
    if params and kind.shows in ("probation", "slurm"):
        raise bad_fault(text, f"{kind.name} takes no parameters", nodes)
    offset_text = None
    if kind.shows == "probation":
        if not rest:
            raise bad_fault(text, "expected an offset after the last '@' (when, from the window's start)", nodes)
        offset_text = rest.pop()
    if len(rest) > 1:
        raise bad_fault(text, f"{kind.name} takes one @NODE and no @OFFSET (only criterion 5's faults do)", nodes)
    target = rest[0] if rest else ""
    if kind.target == "none" and rest:
        raise bad_fault(text, f"{kind.name} takes no target", nodes)
    node, colon, index_text = target.partition(":")
    if kind.target == "node" and not node:
        raise bad_fault(text, f"{kind.name} needs a node (e.g. {kind.name}@sim-node-01)", nodes)
    if rest and not node:
        raise bad_fault(text, "expected a node after '@'", nodes)
    index: int | None = None
    if colon:
        if kind.shows == "slurm":
            raise bad_fault(text, f"{kind.name} takes a node, not :INDEX", nodes)
        if not index_text.isdigit() or not 0 <= int(index_text) < GPUS_PER_NODE:
            raise bad_fault(text, f"bad index {index_text!r} (0..{GPUS_PER_NODE - 1})", nodes)
        index = int(index_text)
    if kind.shows == "slurm":
        return SchedulerFault(kind.name, node)
    if offset_text is not None:
        default_s, _, _ = production_faults.KINDS[kind.name]
        at, plus, length = offset_text.partition("+")
        try:
            offset = parse_duration(at, allow_zero=True)
            duration = parse_duration(length) if plus else default_s
        except ValueError as exc:
            raise bad_fault(text, str(exc), nodes) from None
        return RecurrenceFault(kind.name, node or None, index, offset, duration, spec)
    return _checked(Fault(kind.name, node or None, index or 0, dict(params or {})), text, nodes)


def _checked(fault: Fault, text: str, nodes: Sequence[str]) -> Fault:
    known = DEFAULT_PARAMS.get(fault.kind, {})
    unknown = sorted(set(fault.params) - set(known))
    if unknown:
        listed = sorted(known) or "none"
        raise bad_fault(text, f"unknown parameter(s) {unknown} for {fault.kind} (known: {listed})", nodes)
    if fault.kind == "bad-restore" and fault.param("mode") not in RESTORE_MODES:
        raise bad_fault(text, f"mode must be one of {RESTORE_MODES}", nodes)
    if fault.kind == "gpu-xid" and fault.param("mode") not in XID_MODES:
        raise bad_fault(text, f"mode must be one of {XID_MODES}", nodes)
    if "factor" in known:
        factor = fault.param("factor")
        if isinstance(factor, bool) or not isinstance(factor, int | float) or not math.isfinite(factor) or factor <= 0:
            raise bad_fault(text, f"factor must be a finite number > 0, not {factor!r}", nodes)
        if fault.kind in BANDWIDTH_FAULTS and factor > 1:
            problem = f"factor must be at most 1 (a fault slows the links, never speeds them): {factor!r}"
            raise bad_fault(text, problem, nodes)
    at_step = fault.param("at_step")
    if at_step is not None and (isinstance(at_step, bool) or not isinstance(at_step, int) or at_step < 2):
        raise bad_fault(text, f"at_step must be a training step >= 2, not {at_step!r}", nodes)
    return fault


def check(fault: SimFault, nodes: Sequence[str]) -> SimFault:
    """`fault` if the node it names is one of `nodes` (the simulated cluster's), else the spec's usage error."""
    if fault.node is not None and fault.node not in nodes:
        raise bad_fault(str(fault), f"unknown node {fault.node!r}", nodes)
    return fault


def model_fault(item: str | Mapping[str, Any] | SimFault, cluster: SimCluster) -> Fault:
    """A fault of the acceptance-time model: a parsed one, a spec, or a scenario file's mapping
    (``{fault: SPEC, PARAM: VALUE ...}``), checked against `cluster`'s nodes."""
    names = [n.name for n in cluster.nodes]
    if isinstance(item, str):
        fault = parse_spec(item, nodes=names)
    elif isinstance(item, Mapping):
        fault = parse_spec(str(item.get("fault", "")), {k: v for k, v in item.items() if k != "fault"}, names)
    else:
        fault = item
    check(fault, names)
    if not isinstance(fault, Fault):
        where = "criterion 5's probation" if isinstance(fault, RecurrenceFault) else "the simulated Slurm"
        raise bad_fault(str(fault), f"{fault.kind} is a fault of {where}, not of the cluster's tools", names)
    return fault


def parse_fault(text: str, cluster: SimCluster, params: Mapping[str, Any] | None = None) -> Fault:
    """An acceptance-time fault from its spec (and a scenario's parameters), checked against `cluster`."""
    return model_fault({"fault": text, **(params or {})}, cluster)


@dataclass(frozen=True)
class SimFaults:
    """The faults given for one run, parsed; each backend takes the ones it shows."""

    items: tuple[SimFault, ...] = ()

    @classmethod
    def parse(cls, texts: Iterable[str]) -> SimFaults:
        return cls(tuple(parse_spec(t) for t in texts if t.strip()))

    @classmethod
    def from_text(cls, text: str) -> SimFaults:
        """From `str(faults)` (what an xdist worker is handed)."""
        return cls.parse(text.split(","))

    def __iter__(self) -> Iterator[SimFault]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __str__(self) -> str:
        return ",".join(str(f) for f in self.items)

    def __repr__(self) -> str:
        return repr(tuple(str(f) for f in self.items))

    def shown(self) -> str:
        """For a report header: the specs, or "none"."""
        return ", ".join(str(f) for f in self.items) or "none"

    @property
    def acceptance(self) -> tuple[Fault, ...]:
        """The faults of the acceptance-time cluster (its tools, its hosts)."""
        return tuple(f for f in self.items if isinstance(f, Fault))

    @property
    def probation(self) -> tuple[RecurrenceFault, ...]:
        """Criterion 5's: the production period after the acceptance."""
        return tuple(f for f in self.items if isinstance(f, RecurrenceFault))

    @property
    def scheduler(self) -> tuple[SchedulerFault, ...]:
        return tuple(f for f in self.items if isinstance(f, SchedulerFault))

    def check(self, nodes: Sequence[str]) -> SimFaults:
        for fault in self.items:
            check(fault, nodes)
        return self

    def refused(self, shows: Iterable[str]) -> list[tuple[SimFault, Kind]]:
        """The faults a backend that shows only `shows` cannot show, with their kinds (for the hint)."""
        offered = set(shows)
        return [(f, kind_of(f)) for f in self.items if kind_of(f).shows not in offered]
