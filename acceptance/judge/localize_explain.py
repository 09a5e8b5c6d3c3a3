"""What explains the groups seen so far: the fewest bad nodes and bad links consistent with every result.

A hypothesis is a set of link classes (`localize_topology`) and a set of nodes. It predicts a
group slow when the group contains one of its nodes or crosses one of its links. It is
consistent when every group seen ok is predicted ok, and every bad group is explained: a failed
group or a slow one no link explains needs a node of its own, among the nodes not cleared by an
ok group (a failed group whose error lines name a node needs that node); so does a crossing
group far slower than the other groups its link explains (a bad node behind a slow spine).

`explain` returns every consistent hypothesis of the lowest cost (nodes + links). When none
exists, the results contradict each other, which a fixed fault cannot do: something is
intermittent. Then a node also seen in an unexplained bad group no longer counts as cleared
(`Explanation.intermittent`).
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from acceptance.judge.localize_groups import FAILED, OK, SLOW, Observation
from acceptance.judge.localize_topology import LinkClass, Topology

MAX_NODES = 4
MAX_LINKS = 2
ENUM_LIMIT = 24
OUTLIER_Z = 4.0
OUTLIER_FLOOR = 0.03


@dataclass(frozen=True)
class Hypothesis:
    links: frozenset[LinkClass]
    nodes: frozenset[str]

    @property
    def cost(self) -> int:
        return len(self.links) + len(self.nodes)

    def sort_key(self) -> tuple[int, tuple[str, ...], tuple[str, ...]]:
        return (self.cost, tuple(sorted(link.name for link in self.links)), tuple(sorted(self.nodes)))


@dataclass(frozen=True)
class Explanation:
    """The cheapest consistent hypotheses, and what each one leaves to a node."""

    hypotheses: tuple[Hypothesis, ...]
    needs: Mapping[Hypothesis, tuple[Observation, ...]]
    cleared: Mapping[Hypothesis, frozenset[str]]
    intermittent: bool = False

    @property
    def unique(self) -> bool:
        return len(self.hypotheses) == 1

    def candidates(self) -> list[str]:
        """Nodes some cheapest hypothesis could blame, most implicated first."""
        count: dict[str, int] = {}
        for h in self.hypotheses:
            cleared = self.cleared[h]
            for o in self.needs[h]:
                for node in _candidates(o, cleared):
                    count[node] = count.get(node, 0) + 1
        return sorted(count, key=lambda n: (-count[n], n))


def _candidates(o: Observation, cleared: frozenset[str]) -> frozenset[str]:
    named = frozenset(o.blamed) & frozenset(o.nodes)
    return (named or frozenset(o.nodes)) - cleared


def _predicted(topology: Topology, links: frozenset[LinkClass], o: Observation) -> bool:
    return bool(links) and bool(topology.classes_of(o.nodes) & links)


def needs_node(
    topology: Topology, links: frozenset[LinkClass], observations: Sequence[Observation]
) -> list[Observation]:
    """Bad groups that `links` alone do not explain."""
    out = [o for o in observations if o.status == FAILED or (o.status == SLOW and not _predicted(topology, links, o))]
    by_round: dict[int, list[Observation]] = {}
    for o in observations:
        if o.status == SLOW and o.ratio is not None and _predicted(topology, links, o):
            by_round.setdefault(o.round, []).append(o)
    for group in by_round.values():
        if len(group) < 3:
            continue
        ratios = [o.ratio for o in group if o.ratio is not None]
        median = statistics.median(ratios)
        spread = max(1.4826 * statistics.median(abs(r - median) for r in ratios), OUTLIER_FLOOR)
        out += [o for o in group if o.ratio is not None and (o.ratio - median) / spread < -OUTLIER_Z]
    return out


def _packing_bound(sets: Sequence[frozenset[str]]) -> int:
    """A lower bound on any hitting set: how many pairwise-disjoint sets there are (greedy)."""
    taken: set[str] = set()
    count = 0
    for s in sorted(sets, key=len):
        if not s & taken:
            taken |= s
            count += 1
    return count


def min_hitting_sets(sets: Iterable[frozenset[str]], budget: int) -> list[frozenset[str]]:
    """Every smallest set of nodes meeting each of `sets` (at most `budget` nodes, `ENUM_LIMIT` answers)."""
    unique = sorted(set(sets), key=_set_key)
    if not unique:
        return [frozenset()]
    if any(not s for s in unique):
        return []
    lower = _packing_bound(unique)
    for k in range(lower, budget + 1):
        found: set[frozenset[str]] = set()
        _branch(unique, frozenset(), k, found)
        if found:
            return sorted(found, key=sorted)[:ENUM_LIMIT]
    return []


def _set_key(s: frozenset[str]) -> tuple[int, list[str]]:
    return (len(s), sorted(s))


def _branch(sets: Sequence[frozenset[str]], chosen: frozenset[str], k: int, found: set[frozenset[str]]) -> None:
    if len(found) >= ENUM_LIMIT:
        return
    unhit = [s for s in sets if not s & chosen]
    if not unhit:
        found.add(chosen)
        return
    if k == 0 or _packing_bound(unhit) > k:
        return
    smallest: frozenset[str] = min(unhit, key=_set_key)
    for node in sorted(smallest):
        _branch(sets, chosen | {node}, k - 1, found)


def _link_options(topology: Topology, observations: Sequence[Observation]) -> list[frozenset[LinkClass]]:
    """Link sets worth trying: classes some slow group crosses and no ok group does."""
    used_ok = {c for o in observations if o.status == OK for c in topology.classes_of(o.nodes)}
    slow = {c for o in observations if o.status == SLOW for c in topology.classes_of(o.nodes)}
    options = sorted(slow - used_ok, key=lambda c: c.name)
    out: list[frozenset[LinkClass]] = [frozenset()]
    out += [frozenset({c}) for c in options]
    if len(options) <= 16:
        out += [frozenset(pair) for pair in itertools.combinations(options, MAX_LINKS)]
    return out


def _attempt(topology: Topology, observations: Sequence[Observation], lenient: bool) -> Explanation:
    ok_nodes = frozenset(n for o in observations if o.status == OK for n in o.nodes)
    best: list[Hypothesis] = []
    needs: dict[Hypothesis, tuple[Observation, ...]] = {}
    cleared_of: dict[Hypothesis, frozenset[str]] = {}
    best_cost = MAX_NODES + MAX_LINKS + 1
    for links in _link_options(topology, observations):
        if len(links) > best_cost:
            continue
        unexplained = needs_node(topology, links, observations)
        cleared = ok_nodes
        if lenient:
            cleared = ok_nodes - {n for o in unexplained for n in o.nodes}
        budget = min(MAX_NODES, best_cost - len(links))
        for nodes in min_hitting_sets([_candidates(o, cleared) for o in unexplained], budget):
            h = Hypothesis(links, nodes)
            if h.cost < best_cost:
                best, best_cost = [], h.cost
            if h.cost == best_cost:
                best.append(h)
                needs[h], cleared_of[h] = tuple(unexplained), cleared
    best.sort(key=Hypothesis.sort_key)
    kept = tuple(best[:ENUM_LIMIT])
    return Explanation(kept, {h: needs[h] for h in kept}, {h: cleared_of[h] for h in kept}, lenient)


def explain(topology: Topology, observations: Sequence[Observation]) -> Explanation:
    """The cheapest consistent hypotheses (see the module docstring); none when nothing cheap enough fits."""
    strict = _attempt(topology, observations, lenient=False)
    if strict.hypotheses:
        return strict
    return _attempt(topology, observations, lenient=True)


def node_confirmed(
    topology: Topology, node: str, needs: Sequence[Observation], cleared: frozenset[str], clear_links: set[LinkClass]
) -> bool:
    """Named by the tool's own error lines, or bad in a group whose other members and links are all cleared.

    `clear_links` holds the links of groups that were ok or exactly as slow as the hypothesis'
    links make them, and those links themselves: a group crossing one of them needs a node only
    when it is far slower than that link makes the others.
    """
    groups = [o for o in needs if node in o.nodes]
    return any(node in o.blamed for o in groups) or any(
        set(o.nodes) - {node} <= cleared and topology.classes_of(o.nodes) <= clear_links for o in groups
    )


def link_confirmed(
    topology: Topology, link: LinkClass, observations: Sequence[Observation], cleared: frozenset[str]
) -> bool:
    """Some slow group crossing the link has only cleared nodes: no node can explain it."""
    return any(
        o.status == SLOW and link in topology.classes_of(o.nodes) and set(o.nodes) <= cleared for o in observations
    )


def confirmed(topology: Topology, expl: Explanation, observations: Sequence[Observation]) -> bool:
    """The one cheapest hypothesis, with evidence of its own for each of its nodes and links."""
    if not expl.unique:
        return False
    h = expl.hypotheses[0]
    cleared, needs = expl.cleared[h], expl.needs[h]
    normal = [o for o in observations if o.status == OK or (o.bad and o not in needs)]  # ok, or as slow as h says
    clear_links = {c for o in normal for c in topology.classes_of(o.nodes)} | set(h.links)
    return all(node_confirmed(topology, n, needs, cleared, clear_links) for n in h.nodes) and all(
        link_confirmed(topology, link, observations, cleared) for link in h.links
    )
