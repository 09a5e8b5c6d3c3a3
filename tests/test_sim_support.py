"""Shared helpers of the simulator tests: build a runner, run nccl-tests over some nodes."""

from __future__ import annotations

from collections.abc import Sequence

from acceptance.sim.model.runner import SimRunner
from acceptance.sim.model.scenario import Scenario
from acceptance.sim.runtime import Host, ToolRun

ALL_REDUCE = ["all_reduce_perf", "-b", "8", "-e", "16G", "-f", "2", "-g", "1"]


def make_runner(faults: Sequence[str] = (), seed: int = 1, nodes: int = 16) -> SimRunner:
    return SimRunner.from_scenario(Scenario(nodes=nodes, nodes_per_leaf=8 if nodes <= 64 else 16), faults, seed)


def hosts_for(names: Sequence[str], slots: int = 8) -> list[Host]:
    return [Host(f"nccl-worker-{i}", name, slots) for i, name in enumerate(names)]


def mpirun_nccl(
    runner: SimRunner,
    names: Sequence[str],
    tool: Sequence[str] = ALL_REDUCE,
    env: dict[str, str] | None = None,
) -> ToolRun:
    argv = [
        "mpirun",
        "--allow-run-as-root",
        "-np",
        str(8 * len(names)),
        "--hostfile",
        "/etc/mpi/hostfile",
        *tool,
    ]
    return runner.run(argv, env or {}, "launcher-node", hosts_for(names))


def node_names(count: int, width: int = 2) -> list[str]:
    return [f"sim-node-{i:0{width}d}" for i in range(1, count + 1)]
