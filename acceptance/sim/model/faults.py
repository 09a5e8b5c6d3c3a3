"""Faults to inject into the simulated cluster, and what each one does.

Compact syntax (the plugin's repeatable ``--sim-fault`` and ``acceptance sim run --fault``; parsed in
`acceptance.sim.model.faultspec`, the one grammar of simulated faults)::

    KIND[@NODE[:INDEX]]      nic-degraded@sim-node-07   gpu-xid@sim-node-03:5   bad-restore

INDEX is the GPU for GPU faults and the rail (NIC ``mlx5_INDEX``, rail-aligned with GPU INDEX)
for NIC and link faults; it defaults to 0. Scenario files may add parameters
(`factor`, `mode`, `version`, `xid`, `probability`, `at_step`), see `KINDS`. With ``at_step: T``
(``gpu-xid``, ``nic-degraded``, ``nic-down``, ``gpu-throttle``) the fault strikes the
training job in step T instead of being there from the start (`acceptance.sim.model.incident`).

Effects (each only on its target):

- ``nic-degraded`` one rail at reduced speed: multi-node collectives through the node lose
  ~38% busbw at large sizes (`factor`, default 0.62); single-node runs are unaffected.
- ``nic-down`` one rail down: traffic of that rail detours, multi-node busbw through the node x0.55.
- ``gpu-xid`` XID 79 (GPU fallen off the bus): DCGM fails on that GPU (exit 205), NCCL init fails
  on the node's ranks with NCCL's real failure lines (``mode: hang``: the run prints its rank
  list and then nothing, exit 137 after 4 simulated hours, for the caller's deadline to catch),
  the training job dies at start-up.
- ``gpu-throttle`` thermal clock events: DCGM targeted_power fails and targeted_stress warns
  (level >= 3), that rank computes slower so the global step time rises (x1.12).
- ``ecc-dbe`` uncorrectable ECC error with a pending row remap: software (all levels), memory
  (level >= 2) and memtest (level 4) fail on that GPU.
- ``link-flap`` a flapping link: high run-to-run variance, 40% of runs through the node are slow.
  Whether the k-th multi-node run through the node is slow depends on k (the simulator counts),
  not on which job it is, so a session replays identically whatever its run id.
- ``spine-slow`` the spine is congested: only runs spanning more than one leaf group are slow
  (x0.7), so no single node is to blame.
- ``leaf-uplink`` the uplinks of NODE's leaf switch to the spine are degraded: only runs that
  cross between that leaf and another are slow (x0.6); runs inside the leaf, and runs crossing
  other leaves, are not. A node of the leaf names it; INDEX is not used.
- ``bad-restore`` the resumed training run shows a loss jump after the restored step
  (`mode: loss-jump`, default) or resumes at the wrong step (`mode: step-off`).
- ``nccl-version`` the cluster's NCCL is another version (`version`, default 2.27.3).
- ``node-down`` (extra) the node is NotReady.
- ``gpu-busy`` (SSH hosts only) another process holds the GPU: ``nvidia-smi --query-compute-apps``
  lists it (`pid`, `process`, `memory_mib`), so the preflight of a bare-metal cluster refuses the node.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from acceptance.sim.model.cluster import GPUS_PER_NODE, SimCluster, Versions

# kind -> (target: "none" | "node", one-line meaning)
KINDS: dict[str, tuple[str, str]] = {
    "nic-degraded": ("node", "one NIC/rail at reduced speed (INDEX = rail)"),
    "nic-down": ("node", "one NIC/rail down (INDEX = rail)"),
    "gpu-xid": ("node", "XID 79 on a GPU: DCGM fails on it, NCCL init fails (INDEX = GPU)"),
    "gpu-throttle": ("node", "a GPU throttles: DCGM targeted_power fails, step time rises (INDEX = GPU)"),
    "ecc-dbe": ("node", "double-bit ECC error, row remap pending: memory tests fail (INDEX = GPU)"),
    "link-flap": ("node", "a flapping link: intermittent slow runs (INDEX = rail)"),
    "spine-slow": ("none", "slow spine: runs across leaf groups are slow"),
    "leaf-uplink": ("node", "the uplinks of NODE's leaf are degraded: runs crossing that leaf are slow"),
    "bad-restore": ("none", "loss jump after the restored step, or resumed step index off"),
    "nccl-version": ("none", "the cluster runs another NCCL version"),
    "node-down": ("node", "the node is NotReady"),
    "gpu-busy": ("node", "another process holds the GPU, as nvidia-smi shows on SSH hosts (INDEX = GPU)"),
}
DEFAULT_PARAMS: dict[str, dict[str, Any]] = {
    "nic-degraded": {"factor": 0.62, "at_step": None},
    "nic-down": {"factor": 0.55, "at_step": None},
    "gpu-xid": {"xid": 79, "mode": "fail", "at_step": None},
    "gpu-throttle": {"factor": 1.12, "at_step": None},
    "link-flap": {"probability": 0.4},
    "spine-slow": {"factor": 0.7},
    "leaf-uplink": {"factor": 0.6},
    "bad-restore": {"mode": "loss-jump", "jump": 0.35},
    "nccl-version": {"version": "2.27.3"},
    "gpu-busy": {"pid": 48213, "process": "python3", "memory_mib": 71680},
}
#: faults whose `factor` scales the links' bandwidth (the others' scales a step time)
BANDWIDTH_FAULTS = frozenset({"nic-degraded", "nic-down", "spine-slow", "leaf-uplink"})
RESTORE_MODES = ("loss-jump", "step-off")
XID_MODES = ("fail", "hang")


@dataclass(frozen=True)
class Fault:
    kind: str
    node: str | None = None
    index: int = 0
    params: Mapping[str, Any] = field(default_factory=dict)

    def param(self, name: str) -> Any:
        return self.params.get(name, DEFAULT_PARAMS.get(self.kind, {}).get(name))

    def __str__(self) -> str:
        if self.node is None:
            return self.kind
        return f"{self.kind}@{self.node}:{self.index}"


@dataclass(frozen=True)
class Fabric:
    """How faults bend one nccl-tests run: bandwidth factor at large sizes and extra noise."""

    factor: float = 1.0
    jitter: float = 0.0


@dataclass(frozen=True)
class FaultSet:
    """The composed faults of a run, with the questions the tool models ask them."""

    faults: tuple[Fault, ...] = ()

    def of_kind(self, kind: str) -> list[Fault]:
        return [f for f in self.faults if f.kind == kind]

    def on(self, nodes: Iterable[str], *kinds: str) -> list[Fault]:
        wanted = set(nodes)
        return [f for f in self.faults if f.node in wanted and (not kinds or f.kind in kinds)]

    def versions(self, base: Versions) -> Versions:
        for fault in self.of_kind("nccl-version"):
            return base.with_overrides({"nccl": str(fault.param("version"))})
        return base

    def node_ready(self, node: str) -> bool:
        return not self.on([node], "node-down")

    def rails_down(self, node: str) -> set[int]:
        return {f.index for f in self.on([node], "nic-down")}

    def fatal(self, nodes: Sequence[str]) -> Fault | None:
        """The fault that stops a GPU job on these nodes from starting (XID GPU, node down)."""
        hits = self.on(nodes, "gpu-xid", "node-down")
        return hits[0] if hits else None

    def fabric(
        self,
        cluster: SimCluster,
        nodes: Sequence[str],
        collective: str,
        r: random.Random,
        *,
        ranks_per_node: int = GPUS_PER_NODE,
        flap_roll: Callable[[Fault], float] | None = None,
    ) -> Fabric:
        """Bandwidth factor for a run over `nodes` (distinct, in order); 1.0 within one node.

        A NIC fault on a rail the run does not use (INDEX >= `ranks_per_node`) does not slow it.
        `flap_roll(fault)` draws whether a flapping link is down for this run (default: from `r`).
        """
        distinct = list(dict.fromkeys(nodes))
        if len(distinct) < 2:
            return Fabric()
        factor, jitter = 1.0, 0.0
        for fault in self.on(distinct):
            if fault.kind in ("nic-degraded", "nic-down") and fault.index < ranks_per_node:
                f = float(fault.param("factor"))
                factor *= f if collective != "alltoall" else 1 - (1 - f) / 2
            elif fault.kind == "link-flap":
                jitter += 0.01
                roll = flap_roll(fault) if flap_roll is not None else r.random()
                if roll < float(fault.param("probability")):
                    factor *= r.uniform(0.45, 0.8)
                    jitter += 0.03
            elif fault.kind == "gpu-throttle":
                factor *= 0.97
        leaves = {cluster.leaf_of(n) for n in distinct}
        for fault in self.of_kind("spine-slow"):
            if len(leaves) > 1:
                factor *= float(fault.param("factor"))
        for fault in self.of_kind("leaf-uplink"):
            if len(leaves) > 1 and fault.node is not None and cluster.leaf_of(fault.node) in leaves:
                factor *= float(fault.param("factor"))
        return Fabric(factor, jitter)

    def step_time_factor(self, cluster: SimCluster, nodes: Sequence[str]) -> float:
        """Global step time multiplier of a training job on `nodes` (the slowest rank sets the pace)."""
        factor = 1.0
        for fault in self.on(nodes, "gpu-throttle"):
            factor = max(factor, float(fault.param("factor")))
        comm = 1.0
        for fault in self.on(nodes, "nic-degraded", "nic-down"):
            comm = min(comm, float(fault.param("factor")))
        leaves = {cluster.leaf_of(n) for n in nodes}
        if len(leaves) > 1:
            for fault in self.of_kind("spine-slow"):
                comm = min(comm, float(fault.param("factor")))
            for fault in self.of_kind("leaf-uplink"):
                if fault.node is not None and cluster.leaf_of(fault.node) in leaves:
                    comm = min(comm, float(fault.param("factor")))
        # about a quarter of a step is exposed communication
        return factor * (0.75 + 0.25 / comm)

    def restore(self) -> Fault | None:
        hits = self.of_kind("bad-restore")
        return hits[0] if hits else None
