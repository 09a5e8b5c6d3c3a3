"""Name the bad node: the pure planner of fabric localization.

`next_step(problem, observations)` returns the next `Round` (disjoint groups to test in
parallel) or the `Conclusion`. Round 1 screens every node in pairs across leaves; later rounds
re-test suspects against known-good peers of their own leaf and probe the links the cheapest
explanations disagree on (`localize_plan`); a conclusion is reached when one cheapest
explanation is left and each node and link in it has evidence of its own (`localize_explain`).
Results that contradict each other mean an intermittent fault: the suspects get one repeat
before the conclusion. A search asked for by a failing test that sees nothing in round 1 tries
new pairs once. Pure: observations in, groups or a conclusion out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from acceptance.judge.localize_explain import Explanation, confirmed, explain
from acceptance.judge.localize_groups import Observation
from acceptance.judge.localize_plan import Group, followup, screen
from acceptance.judge.localize_text import describe_culprits, describe_none, describe_rounds, describe_unsure
from acceptance.judge.localize_topology import Topology

NODE, NIC, SWITCH, NONE = "node", "nic", "switch", "none"


@dataclass(frozen=True)
class Problem:
    """What the search starts from: the nodes to test, the topology, and what is already known.

    `unavailable`: nodes that cannot run a test (NotReady), with why; they are culprits already.
    `known`: earlier findings per node (a DCGM failure, a node named by the failing run's error
    lines). `triggered`: a failing test asked for the search (an empty first round is repeated once).
    """

    nodes: tuple[str, ...]
    topology: Topology
    unavailable: Mapping[str, str] = field(default_factory=dict)
    known: Mapping[str, str] = field(default_factory=dict)
    triggered: bool = True
    max_rounds: int = 4


@dataclass(frozen=True)
class Round:
    number: int
    groups: tuple[Group, ...]
    purpose: str


@dataclass(frozen=True)
class Culprit:
    name: str
    kind: str
    why: str


@dataclass(frozen=True)
class Conclusion:
    """What the search found. `culprits` empty: no culprit (`summary` says what was seen)."""

    culprits: tuple[Culprit, ...]
    summary: str
    evidence: tuple[str, ...]
    rounds: int
    tests: int
    confirmed: bool = True
    intermittent: bool = False
    suspects: tuple[str, ...] = ()

    @property
    def culprit(self) -> str:
        return ",".join(c.name for c in self.culprits) or NONE

    @property
    def culprit_kind(self) -> str:
        return ",".join(c.kind for c in self.culprits) or NONE

    def to_json(self) -> dict[str, Any]:
        return {
            "culprits": [{"name": c.name, "kind": c.kind, "why": c.why} for c in self.culprits],
            "summary": self.summary, "evidence": list(self.evidence), "rounds": self.rounds, "tests": self.tests,
            "confirmed": self.confirmed, "intermittent": self.intermittent, "suspects": list(self.suspects),
        }  # fmt: skip

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Conclusion:
        return cls(
            tuple(Culprit(str(c["name"]), str(c["kind"]), str(c["why"])) for c in doc["culprits"]),
            str(doc["summary"]), tuple(doc["evidence"]), int(doc["rounds"]), int(doc["tests"]),
            bool(doc["confirmed"]), bool(doc["intermittent"]), tuple(doc.get("suspects", ())),
        )  # fmt: skip


def _first_intermittent(topology: Topology, observations: Sequence[Observation], done: int) -> int:
    for k in range(1, done + 1):
        prefix = [o for o in observations if o.round <= k]
        if any(o.bad for o in prefix) and explain(topology, prefix).intermittent:
            return k
    return done + 1


def next_step(problem: Problem, observations: Sequence[Observation]) -> Round | Conclusion:
    """The next round of group tests, or the conclusion (see the module docstring)."""
    topology = problem.topology.restricted(problem.nodes)
    done = max((o.round for o in observations), default=0)
    if done == 0 and len(problem.nodes) >= 2:
        return Round(1, screen(topology, problem.nodes), "every node in a pair, across leaves where possible")
    if not any(o.bad for o in observations):
        if problem.triggered and done == 1 and problem.max_rounds > 1:
            seen = {frozenset(o.nodes) for o in observations}
            return Round(2, screen(topology, problem.nodes, avoid=seen), "nothing seen in round 1: new pairs, once")
        return _conclude(problem, topology, observations, None)
    expl = explain(topology, observations)
    if not expl.hypotheses:
        groups = followup(topology, problem.nodes, observations, expl) if done < problem.max_rounds else ()
        if groups:
            return Round(done + 1, groups, "nothing simple explains it: nodes of bad groups inside their leaves")
        return _conclude(problem, topology, observations, expl, sure=False)
    fresh = expl.intermittent and _first_intermittent(topology, observations, done) == done
    if confirmed(topology, expl, observations) and (not fresh or done >= problem.max_rounds):
        return _conclude(problem, topology, observations, expl)
    if done >= problem.max_rounds or (expl.intermittent and not fresh):
        return _conclude(problem, topology, observations, expl, sure=False)
    groups = followup(topology, problem.nodes, observations, expl)
    if not groups:
        return _conclude(problem, topology, observations, expl, sure=False)
    purpose = "suspects again with known-good peers (intermittent)" if expl.intermittent else (
        "suspects with known-good peers of their own leaf; links confirmed inside leaves")  # fmt: skip
    return Round(done + 1, groups, purpose)


def conclude_now(problem: Problem, observations: Sequence[Observation], why: str) -> Conclusion:
    """The conclusion from what was seen so far, when the search must stop (its deadline); `why` says so."""
    done = max((o.round for o in observations), default=0)
    if done == 0:
        topology = problem.topology.restricted(problem.nodes)
        found = _conclude(problem, topology, (), None)
        return replace(found, summary=f"{found.summary} ({why})", confirmed=False)
    step = next_step(replace(problem, max_rounds=done), observations)
    assert isinstance(step, Conclusion)
    return replace(step, evidence=(*step.evidence, why))


def drive(
    problem: Problem,
    run_round: Callable[[Round], Sequence[Observation]],
    stop: Callable[[], str | None] = lambda: None,
) -> tuple[Conclusion, tuple[Observation, ...]]:
    """Plan, run (`run_round` does the I/O) and judge rounds until a conclusion; `stop` (a reason) ends it early."""
    observations: list[Observation] = []
    while True:
        step = next_step(problem, observations)
        if isinstance(step, Conclusion):
            return step, tuple(observations)
        reason = stop()
        if reason:
            return conclude_now(problem, observations, reason), tuple(observations)
        observations += run_round(step)


def _conclude(
    problem: Problem,
    topology: Topology,
    observations: Sequence[Observation],
    expl: Explanation | None,
    *,
    sure: bool = True,
) -> Conclusion:
    rounds = max((o.round for o in observations), default=0)
    tests = len(observations)
    evidence = (*describe_rounds(topology, observations), *_known_lines(problem))
    down = tuple(Culprit(n, NODE, f"{n}: {why} (not tested)") for n, why in sorted(problem.unavailable.items()))
    if expl is None:
        summary = describe_none(observations, problem.triggered)
        if down:
            summary = "; ".join(c.why for c in down) + "; " + summary
        return Conclusion(down, summary, evidence, rounds, tests)
    if not sure or not expl.unique:
        summary, suspects = describe_unsure(topology, observations, expl)
        if down:
            summary = "; ".join(c.why for c in down) + "; " + summary
        return Conclusion(down, summary, evidence, rounds, tests, False, expl.intermittent, suspects)
    h = expl.hypotheses[0]
    found = describe_culprits(topology, observations, expl, h, problem.known)
    culprits = (*down, *(Culprit(name, kind, why) for name, kind, why in found))
    summary = "; ".join(c.why for c in culprits)
    if expl.intermittent:
        summary += " (intermittent: the same node was also seen fine)"
    return Conclusion(culprits, summary, evidence, rounds, tests, True, expl.intermittent)


def _known_lines(problem: Problem) -> list[str]:
    return [f"known before the search: {node}: {what}" for node, what in sorted(problem.known.items())]
