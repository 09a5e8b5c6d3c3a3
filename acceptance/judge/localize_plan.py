"""Which disjoint groups to test next: the screen, the follow-up, and the handover's pair set.

- `screen`: every node in a pair, pairs across leaves where possible, spread over as many leaf
  pairs as possible (a bad uplink then shows as "every pair touching leaf-03", a slow spine as
  "every crossing pair", a bad node as one pair).
- `followup`: each suspect with a known-good peer of its own leaf (no shared link in between, so
  only the node is tested); the nodes of slow groups a link explains, paired inside their leaves
  (if they are fine there, no node can explain those groups and the link is confirmed); and, when
  the cheapest hypotheses blame different links, crossing pairs on which they disagree.
- `pair_set`: what `--record-baseline` measures: half of each leaf in pairs inside it, the rest
  across leaves, so every node and both sides of every leaf are covered.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Iterable, Sequence

from acceptance.judge.localize_explain import Explanation
from acceptance.judge.localize_groups import OK, Observation
from acceptance.judge.localize_topology import Topology

Group = tuple[str, ...]
MAX_PROBE_PAIRS = 8


def screen(topology: Topology, nodes: Collection[str], avoid: Collection[frozenset[str]] = ()) -> tuple[Group, ...]:
    """Pairs covering `nodes`, across leaves as much as possible; an odd node joins the last pair."""
    wanted = set(nodes)
    pools = {leaf: deque(n for n in members if n in wanted) for leaf, members in topology.members.items()}
    pools = {leaf: pool for leaf, pool in pools.items() if pool}
    used: dict[tuple[str, str], int] = {}
    groups: list[Group] = []
    while sum(len(p) for p in pools.values()) >= 2:
        active = [leaf for leaf in sorted(pools) if pools[leaf]]
        a = max(active, key=lambda leaf: (len(pools[leaf]), -active.index(leaf)))
        x = pools[a].popleft()
        others = [leaf for leaf in active if leaf != a and pools[leaf]]
        if others:
            b = min(others, key=lambda leaf: (used.get((min(a, leaf), max(a, leaf)), 0), -len(pools[leaf]), leaf))
        else:
            b = a
        pool = pools[b]
        y = next((n for n in pool if frozenset((x, n)) not in avoid), pool[0])
        pool.remove(y)
        key = (min(a, b), max(a, b))
        used[key] = used.get(key, 0) + 1
        groups.append((x, y))
    leftover = [n for p in pools.values() for n in p]
    if leftover and groups:
        groups[-1] = (*groups[-1], *leftover)
    return tuple(groups)


def pair_set(topology: Topology, nodes: Collection[str]) -> tuple[Group, ...]:
    """The handover's pairs: half of each leaf inside it, the rest across leaves."""
    wanted = set(nodes)
    inside: list[Group] = []
    rest: list[str] = []
    for members in topology.members.values():
        mine = [n for n in members if n in wanted]
        half = (len(mine) // 2) & ~1
        inside += [(mine[i], mine[i + 1]) for i in range(0, half, 2)]
        rest += mine[half:]
    return (*inside, *screen(topology, rest))


def _partners(observations: Iterable[Observation], node: str) -> set[str]:
    return {n for o in observations if node in o.nodes for n in o.nodes if n != node}


class _Builder:
    """Disjoint groups of one round, picking peers by how much each node is trusted."""

    def __init__(
        self, topology: Topology, nodes: Collection[str], observations: Sequence[Observation], cross_ok: bool
    ) -> None:
        self.topology = topology
        self.cross_ok = cross_ok
        self.observations = observations
        ok = {n for o in observations if o.status == OK for n in o.nodes}
        bad = {n for o in observations if o.bad for n in o.nodes}
        self.trusted = ok - bad
        self.nodes = set(nodes)
        self.used: set[str] = set()
        self.groups: list[Group] = []

    def peer(self, node: str, exclude: Collection[str], allow: Collection[str] = ()) -> str | None:
        """A free node of `node`'s leaf: trusted first, never a former partner when another will do.

        With no link suspected, a trusted node of another leaf will do when the leaf has none.
        """
        leaf = self.topology.leaf(node)
        free = [n for n in self.topology.members[leaf] if n in self.nodes and n not in self.used and n != node]
        before = _partners(self.observations, node)

        def rank(n: str) -> tuple[int, int, str]:
            return (0 if n in self.trusted else 1, 1 if n in before else 0, n)

        plain = sorted((n for n in free if n not in exclude), key=rank)
        if plain:
            return plain[0]
        fallback = sorted((n for n in free if n in allow), key=rank)
        if fallback:
            return fallback[0]
        if not self.cross_ok:
            return None
        elsewhere = sorted(n for n in self.trusted if n in self.nodes and n not in self.used and n not in exclude)
        return elsewhere[0] if elsewhere else None

    def join(self, node: str) -> None:
        leaf = self.topology.leaf(node)
        for i, group in enumerate(self.groups):
            if all(self.topology.leaf(n) == leaf for n in group):
                self.groups[i] = (*group, node)
                self.used.add(node)
                return

    def add(self, *members: str) -> None:
        self.used.update(members)
        self.groups.append(tuple(members))


def _probe_pairs(topology: Topology, expl: Explanation) -> list[tuple[str, str]]:
    """Leaf pairs on whose crossing the cheapest hypotheses disagree."""
    link_sets = {h.links for h in expl.hypotheses}
    if len(link_sets) < 2:
        return []
    leaves = sorted(topology.members)
    out = []
    for i, a in enumerate(leaves):
        for b in leaves[i + 1 :]:
            crossing = topology.classes_of((topology.members[a][0], topology.members[b][0]))
            votes = {bool(crossing & links) for links in link_sets}
            if len(votes) > 1:
                out.append((a, b))
    return out[:MAX_PROBE_PAIRS]


def followup(
    topology: Topology, nodes: Collection[str], observations: Sequence[Observation], expl: Explanation
) -> tuple[Group, ...]:
    """The next round after `expl` (see the module docstring); empty when nothing useful can be tested."""
    build = _Builder(topology, nodes, observations, cross_ok=not any(h.links for h in expl.hypotheses))
    suspects = [n for n in expl.candidates() if n in build.nodes]
    ok_nodes = {n for o in observations if o.status == OK for n in o.nodes}
    explained = [
        n
        for h in expl.hypotheses
        if h.links
        for o in observations
        if o.bad and o not in expl.needs[h] and topology.classes_of(o.nodes) & h.links
        for n in o.nodes
    ]
    if not expl.hypotheses:  # nothing cheap explains it: test every node of a bad group inside its leaf
        explained = [n for o in observations if o.bad for n in o.nodes]
    confirm = [n for n in dict.fromkeys(sorted(explained)) if n not in ok_nodes and n not in suspects]
    for s in suspects:  # first with peers that are not suspects themselves
        if s in build.used:
            continue
        peer = build.peer(s, exclude=[*suspects, *confirm], allow=confirm)
        if peer is not None:
            build.add(s, peer)
    for s in reversed(suspects):  # then the least implicated together, the most implicated left alone
        if s in build.used:
            continue
        peer = build.peer(s, exclude=[*suspects, *confirm], allow=suspects)
        if peer is not None:
            build.add(s, peer)
    for c in confirm:
        if c in build.used:
            continue
        peer = build.peer(c, exclude=suspects, allow=())
        if peer is not None:
            build.add(c, peer)
        else:  # the odd one of its leaf joins a group of that leaf
            build.join(c)
    for a, b in _probe_pairs(topology, expl):
        ends = []
        for leaf in (a, b):
            free = [n for n in topology.members[leaf] if n in build.nodes and n not in build.used]
            free.sort(key=lambda n: (n not in build.trusted, n in suspects, n))
            ends.append(free[0] if free else None)
        x, y = ends
        if x is not None and y is not None:
            build.add(x, y)
    return tuple(build.groups)
