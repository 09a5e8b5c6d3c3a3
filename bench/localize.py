"""Localization benchmark: rounds, group tests and simulated search time to name a bad node, link or leaf.

    python bench/localize.py                       # 16, 64, 256, 1024 nodes, 20 seeds, 100 healthy seeds
    python bench/localize.py --quick               # 16 and 64 nodes, 5 seeds, 20 healthy seeds
    python bench/localize.py --json bench-localize.json

Per cluster size and scenario (one bad node: a degraded NIC on a random node and rail; two
bad nodes; a bad leaf: the uplinks of a random node's leaf), per seed: the simulated cluster
(`acceptance.sim.model`) runs every group test the planner asks for, as ``mpirun`` over the
group's nodes with the sim profile's all_reduce_perf over 1, 2 and 4 GiB; its text goes through
the project's nccl-tests parser and the same judging as the suite's. The pair baseline is
recorded first on the healthy cluster, as ``--record-baseline`` does. Healthy seeds (a search
asked for by a failing test on a healthy cluster) must conclude "no culprit".

Simulated search time per round: `LAUNCH_S` (pods scheduled and ready, MPI wired up; images
cached) plus the longest group's simulated run time; judging takes no simulated time.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from acceptance.clusters.base import WorkloadResult
from acceptance.criteria.localize_run import GroupCommand, measure
from acceptance.judge.localize import Conclusion, Problem, Round, drive
from acceptance.judge.localize_groups import Observation, PairReference, observe_round
from acceptance.judge.localize_plan import pair_set
from acceptance.judge.localize_topology import Topology
from acceptance.sim.model.cluster import GPUS_PER_NODE, LEAF_LABEL, SPINE_LABEL, build_cluster, node_spec
from acceptance.sim.model.faults import FaultSet
from acceptance.sim.model.faultspec import parse_fault
from acceptance.sim.model.runner import SimRunner
from acceptance.sim.runtime import Host

LAUNCH_S = 30.0
ARGV = ("all_reduce_perf", "-b", "8", "-e", "16G", "-f", "2", "-g", "1", "-w", "5", "-n", "20")
SIZES = (1 << 30, 2 << 30, 4 << 30)
TOLERANCE = 0.05
TARGET_ROUNDS = {"1 bad node": 3, "2 bad nodes": 4}


class Oracle:
    """Runs a round's groups on the simulated cluster and judges them; keeps the simulated time."""

    def __init__(self, runner: SimRunner, topology: Topology, reference: PairReference | None) -> None:
        self.runner = runner
        self.topology = topology
        self.reference = reference
        self.command = GroupCommand.of("all_reduce_perf", ARGV, {}, SIZES)
        self.seconds = 0.0

    def measures(self, groups: Sequence[tuple[str, ...]]) -> tuple[list[Any], float]:
        out, longest = [], 0.0
        for group in groups:
            hosts = [Host(n, n, GPUS_PER_NODE) for n in group]
            argv = ["mpirun", "-np", str(GPUS_PER_NODE * len(group)), *self.command.argv]
            tool = self.runner.run(argv, {}, group[0], hosts)
            result = WorkloadResult("g", "nccl", tool.stdout, tool.exit_code, "succeeded" if tool.exit_code == 0 else
                               "failed", "", None, None, {n: n for n in group}, (), (), "")  # fmt: skip
            out.append(measure(group, result, self.command))
            longest = max(longest, tool.duration_s)
        return out, longest

    def run_round(self, step: Round) -> Sequence[Observation]:
        measures, longest = self.measures(step.groups)
        self.seconds += LAUNCH_S + longest
        return observe_round(step.number, measures, self.topology, TOLERANCE, self.reference)


def topology_of(runner: SimRunner) -> Topology:
    labels = {s.name: dict(s.labels) for s in (node_spec(runner.cluster, n) for n in runner.cluster.nodes)}
    return Topology.from_labels(labels, LEAF_LABEL, SPINE_LABEL)


def pair_reference(nodes: int, seed: int) -> PairReference:
    """The handover's pair baseline: `pair_set` on the healthy cluster."""
    runner = SimRunner(build_cluster(nodes, seed))
    topology = topology_of(runner)
    oracle = Oracle(runner, topology, None)
    groups = pair_set(topology, [n.name for n in runner.cluster.nodes])
    measures, _ = oracle.measures(groups)
    return PairReference.from_pairs([(topology.crosses(m.nodes), m.busbw) for m in measures])


def faults_for(scenario: str, nodes: int, seed: int) -> tuple[list[str], set[str]]:
    """Fault specs and the culprit names a correct search gives."""
    r = random.Random(f"{scenario}/{nodes}/{seed}")
    cluster = build_cluster(nodes, seed)
    names = [n.name for n in cluster.nodes]
    if scenario == "healthy":
        return [], set()
    if scenario == "1 bad node":
        node = r.choice(names)
        return [f"nic-degraded@{node}:{r.randrange(GPUS_PER_NODE)}"], {node}
    if scenario == "2 bad nodes":
        pair = r.sample(names, 2)
        return [f"nic-degraded@{n}:{r.randrange(GPUS_PER_NODE)}" for n in pair], set(pair)
    node = r.choice(names)
    leaf = f"leaf-{cluster.leaf_of(node) + 1:02d}"
    return [f"leaf-uplink@{node}"], {leaf}


def search(nodes: int, seed: int, scenario: str, reference: PairReference) -> dict[str, Any]:
    specs, truth = faults_for(scenario, nodes, seed)
    cluster = build_cluster(nodes, seed)
    runner = SimRunner(cluster, FaultSet(tuple(parse_fault(s, cluster) for s in specs)))
    topology = topology_of(runner)
    oracle = Oracle(runner, topology, reference)
    problem = Problem(tuple(n.name for n in cluster.nodes), topology, triggered=True, max_rounds=4)
    started = time.perf_counter()
    conclusion, _ = drive(problem, oracle.run_round)
    return {
        "scenario": scenario, "nodes": nodes, "seed": seed, "faults": specs, "culprit": conclusion.culprit,
        "kind": conclusion.culprit_kind, "rounds": conclusion.rounds, "tests": conclusion.tests,
        "simulated_s": oracle.seconds, "wall_s": time.perf_counter() - started,
        "correct": _correct(conclusion, truth, scenario), "false": _false(conclusion, truth),
    }  # fmt: skip


def _names(conclusion: Conclusion) -> set[str]:
    return {c.name for c in conclusion.culprits}


def _correct(conclusion: Conclusion, truth: set[str], scenario: str) -> bool:
    if scenario == "bad leaf":  # a switch conclusion naming the leaf (with two leaves: the crossing between them)
        return (
            bool(conclusion.culprits)
            and all(c.kind == "switch" for c in conclusion.culprits)
            and any(leaf in c.name for c in conclusion.culprits for leaf in truth)
        )
    return conclusion.confirmed and _names(conclusion) == truth


def _false(conclusion: Conclusion, truth: set[str]) -> bool:
    """A culprit that is not a fault (a node never degraded; a switch when no link is bad)."""
    for c in conclusion.culprits:
        if c.kind == "switch":
            if not any(leaf in c.name for leaf in truth):
                return True
        elif c.name not in truth:
            return True
    return False


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[16, 64, 256, 1024])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--healthy", type=int, default=100, help="healthy seeds per size")
    parser.add_argument("--quick", action="store_true", help="16 and 64 nodes, 5 seeds, 20 healthy seeds")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.quick:
        args.nodes, args.seeds, args.healthy = [16, 64], 5, 20
    rows: list[dict[str, Any]] = []
    print(f"{'nodes':>5} {'scenario':<12} {'seeds':>5} {'correct':>8} {'false':>5} {'rounds max':>10} "
          f"{'rounds mean':>11} {'tests mean':>10} {'sim. search s':>13} {'target met':>10}")  # fmt: skip
    for nodes in args.nodes:
        reference = pair_reference(nodes, 0)
        for scenario in ("1 bad node", "2 bad nodes", "bad leaf", "healthy"):
            count = args.healthy if scenario == "healthy" else args.seeds
            found = [search(nodes, seed, scenario, reference) for seed in range(1, count + 1)]
            rows += found
            rounds = [f["rounds"] for f in found]
            target = TARGET_ROUNDS.get(scenario)
            met = all(f["correct"] for f in found) and (target is None or max(rounds) <= target)
            print(f"{nodes:>5} {scenario:<12} {count:>5} {sum(f['correct'] for f in found):>8} "
                  f"{sum(f['false'] for f in found):>5} {max(rounds):>10} {statistics.mean(rounds):>11.2f} "
                  f"{statistics.mean(f['tests'] for f in found):>10.1f} "
                  f"{statistics.mean(f['simulated_s'] for f in found):>13.0f} {'yes' if met else 'NO':>10}",
                  flush=True)  # fmt: skip
    print(f"simulated time per round: {LAUNCH_S:.0f} s launch + the longest group's run ({', '.join(ARGV[:1])} "
          "at 1, 2 and 4 GiB)")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
