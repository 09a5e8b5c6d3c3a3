"""The simulated H200 cluster in one import: build it, break it, run tools on it.

    from acceptance.sim.model import SimRunner, load_scenario
    runner = SimRunner.from_scenario(load_scenario("healthy-16"), ["nic-degraded@sim-node-07"], seed=3)
    runner.run(["dcgmi", "diag", "-r", "3", "-j"], {}, "sim-node-07", [])   # -> ToolRun

Where things live: `cluster` (nodes, GPUs, NICs, leaf groups, versions, NodeSpec), `faults`
(kinds and effects), `faultspec` (the one grammar of fault specs, `SimFaults`), `scenario` (fixtures/scenarios/*.yaml),
`ncclperf`/`nccltext` (nccl-tests model and text), `dcgmmodel`/`dcgmrender` (DCGM 4.x),
`training` (Megatron log), `runner` (the `ToolRunner` of `acceptance.sim.runtime`). Simulated
time becomes wall time in the emulator (`acceptance.sim.kubeapi.timescale`).
"""

from __future__ import annotations

from acceptance.sim.model.cluster import SimCluster, Versions, build_cluster, node_spec
from acceptance.sim.model.faults import KINDS, Fault, FaultSet
from acceptance.sim.model.faultspec import SimFaults, parse_fault
from acceptance.sim.model.runner import SimRunner
from acceptance.sim.model.scenario import Scenario, available, load_scenario

__all__ = [
    "KINDS",
    "Fault",
    "FaultSet",
    "Scenario",
    "SimCluster",
    "SimFaults",
    "SimRunner",
    "Versions",
    "available",
    "build_cluster",
    "load_scenario",
    "node_spec",
    "parse_fault",
]
