"""A small physical model of group tests, for the localization planner's tests.

Each group's busbw is the pair baseline times the factors of the faults it meets: a bad node
slows every group containing it; a bad leaf uplink slows groups crossing that leaf; a slow spine
slows every crossing group; a flapping node slows a group in some runs only; a node down makes
every group with it fail, naming it (as NCCL's error lines do). Plus run-to-run noise.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from acceptance.judge.localize import Conclusion, Problem, Round, drive
from acceptance.judge.localize_groups import GroupMeasure, Observation, PairReference, observe_round
from acceptance.judge.localize_topology import Topology

SIZES = (1 << 30, 2 << 30, 4 << 30)
REFERENCE = PairReference({s: 360.0 for s in SIZES}, {s: 355.0 for s in SIZES})


def cluster(nodes: int, per_leaf: int, spines: int = 1) -> tuple[tuple[str, ...], Topology]:
    names = tuple(f"node-{i + 1:04d}" for i in range(nodes))
    leaf_of = {n: f"leaf-{i // per_leaf + 1:02d}" for i, n in enumerate(names)}
    leaves = sorted(set(leaf_of.values()))
    spine_of = {leaf: f"spine-{i * spines // len(leaves) + 1:02d}" for i, leaf in enumerate(leaves)}
    return names, Topology(leaf_of, spine_of, "test model")


@dataclass(frozen=True)
class Faults:
    bad: Mapping[str, float] = field(default_factory=dict)
    down: frozenset[str] = frozenset()
    uplinks: Mapping[str, float] = field(default_factory=dict)
    spine: float | None = None
    spine_name: str | None = None  # only groups crossing this spine (None: every crossing group)
    flap: Mapping[str, float] = field(default_factory=dict)
    noise: float = 0.005


def measure(
    topology: Topology, faults: Faults, groups: Sequence[tuple[str, ...]], r: random.Random
) -> list[GroupMeasure]:
    out = []
    for group in groups:
        down = sorted(set(group) & faults.down)
        if down:
            out.append(GroupMeasure(group, {}, f"NCCL failure on {down[0]}", tuple(down)))
            continue
        factor = 1.0
        for node in group:
            factor *= faults.bad.get(node, 1.0)
            if node in faults.flap and r.random() < faults.flap[node]:
                factor *= 0.6
        if topology.crosses(group) and faults.spine is not None:
            spines = {topology.spine(leaf) for leaf in topology.leaves_of(group)}
            if faults.spine_name is None or faults.spine_name in spines:
                factor *= faults.spine
        if topology.crosses(group):
            for leaf in topology.leaves_of(group):
                factor *= faults.uplinks.get(leaf, 1.0)
        run = r.gauss(1.0, faults.noise)
        crossing = topology.crosses(group)
        busbw = {}
        for size in SIZES:
            expected = REFERENCE.expected(crossing, size) or 0.0
            busbw[size] = expected * factor * run * r.gauss(1.0, faults.noise / 2)
        out.append(GroupMeasure(group, busbw))
    return out


def search(problem: Problem, faults: Faults, seed: int) -> tuple[Conclusion, tuple[Observation, ...], list[Round]]:
    r = random.Random(seed)
    rounds: list[Round] = []

    def run_round(step: Round) -> Sequence[Observation]:
        rounds.append(step)
        return observe_round(step.number, measure(problem.topology, faults, step.groups, r), problem.topology, 0.05,
                             REFERENCE)  # fmt: skip

    conclusion, observations = drive(problem, run_round)
    return conclusion, observations, rounds
