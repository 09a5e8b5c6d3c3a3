"""The fabric as localization sees it: nodes in leaf groups, leaves under spines, and the links a group uses.

A group of nodes inside one leaf uses no shared link; a group spanning leaves uses the uplink
of each of its leaves and the spine(s) above them. A *link class* is a set of such elements no
group test can tell apart: with two leaves under one spine, ``leaf-01``'s uplink, ``leaf-02``'s
uplink and the spine carry exactly the same crossings, so they are one class named
``leaf-01<->leaf-02``. Pure: built from node labels or from a profile's listing.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from acceptance.errors import UsageError

FLAT_LEAF = "all"
DEFAULT_SPINE = "spine"

Element = tuple[str, str]  # ("uplink", leaf) | ("spine", spine)
LeafPair = tuple[str, str]


@dataclass(frozen=True)
class LinkClass:
    """Topology elements that carry exactly the same crossings (one suspect, as far as group tests can say).

    `name`: ``leaf-01<->leaf-02`` (one crossing), ``leaf-03<->spine-01`` (a leaf's uplinks) or ``spine-01``.
    """

    name: str
    elements: frozenset[Element] = field(compare=False, repr=False)
    crossings: frozenset[LeafPair] = field(compare=False, repr=False)


@dataclass(frozen=True)
class Topology:
    """node → leaf, leaf → spine. `source` says where it came from (for the evidence)."""

    leaf_of: Mapping[str, str]
    spine_of: Mapping[str, str] = field(default_factory=dict)
    source: str = ""

    @classmethod
    def flat(cls, nodes: Iterable[str], source: str = "no topology known: one leaf") -> Topology:
        return cls({n: FLAT_LEAF for n in nodes}, {FLAT_LEAF: DEFAULT_SPINE}, source)

    @classmethod
    def from_labels(cls, labels: Mapping[str, Mapping[str, str]], leaf_label: str, spine_label: str | None) -> Topology:
        """From each node's labels; a node without the leaf label is an error naming it."""
        missing = sorted(n for n, lab in labels.items() if leaf_label not in lab)
        if missing:
            shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
            raise UsageError(f"node label {leaf_label!r} (localize.topology.leaf_label) missing on {shown}")
        leaf_of = {n: str(lab[leaf_label]) for n, lab in labels.items()}
        spine_of: dict[str, str] = {}
        for node, lab in labels.items():
            spine = str(lab.get(spine_label, DEFAULT_SPINE)) if spine_label else DEFAULT_SPINE
            spine_of.setdefault(leaf_of[node], spine)
        what = f"node labels {leaf_label}" + (f", {spine_label}" if spine_label else "")
        return cls(leaf_of, spine_of, what)

    @classmethod
    def from_listing(
        cls, nodes: Sequence[str], leaves: Mapping[str, Sequence[str]], spines: Mapping[str, Sequence[str]]
    ) -> Topology:
        """From a profile's ``leaves: {leaf: [nodes]}`` and ``spines: {spine: [leaves]}`` (SSH hosts)."""
        leaf_of: dict[str, str] = {}
        for leaf, members in leaves.items():
            for node in members:
                if node in leaf_of:
                    raise UsageError(f"localize.topology.leaves: {node} is in {leaf_of[node]} and {leaf}")
                leaf_of[node] = leaf
        missing = [n for n in nodes if n not in leaf_of]
        if missing:
            raise UsageError(f"localize.topology.leaves: no leaf for {', '.join(missing[:5])}")
        spine_of = {leaf: spine for spine, members in spines.items() for leaf in members}
        for leaf in set(leaf_of.values()):
            spine_of.setdefault(leaf, DEFAULT_SPINE)
        return cls({n: leaf_of[n] for n in nodes}, spine_of, "localize.topology in the profile")

    def restricted(self, nodes: Iterable[str]) -> Topology:
        keep = {n: self.leaf_of[n] for n in nodes}
        return Topology(keep, {leaf: self.spine(leaf) for leaf in set(keep.values())}, self.source)

    def leaf(self, node: str) -> str:
        return self.leaf_of[node]

    def spine(self, leaf: str) -> str:
        return self.spine_of.get(leaf, DEFAULT_SPINE)

    @cached_property
    def members(self) -> dict[str, tuple[str, ...]]:
        """leaf → its nodes, both sorted."""
        out: dict[str, list[str]] = {}
        for node in sorted(self.leaf_of):
            out.setdefault(self.leaf_of[node], []).append(node)
        return {leaf: tuple(out[leaf]) for leaf in sorted(out)}

    def leaves_of(self, nodes: Iterable[str]) -> tuple[str, ...]:
        return tuple(sorted({self.leaf_of[n] for n in nodes}))

    def crosses(self, nodes: Iterable[str]) -> bool:
        return len(self.leaves_of(nodes)) > 1

    def elements_of(self, nodes: Iterable[str]) -> frozenset[Element]:
        """The shared links a group's traffic uses (none inside one leaf)."""
        leaves = self.leaves_of(nodes)
        if len(leaves) < 2:
            return frozenset()
        return frozenset({("uplink", leaf) for leaf in leaves} | {("spine", self.spine(leaf)) for leaf in leaves})

    @cached_property
    def classes(self) -> dict[Element, LinkClass]:
        """Each element's class: elements with the same set of crossings are one class."""
        leaves = sorted(self.members)
        pairs = [(a, b) for a, b in itertools.combinations(leaves, 2)]
        using: dict[Element, set[LeafPair]] = {}
        for a, b in pairs:
            for element in self.elements_of((self.members[a][0], self.members[b][0])):
                using.setdefault(element, set()).add((a, b))
        by_crossings: dict[frozenset[LeafPair], set[Element]] = {}
        for element, pairs_using in using.items():
            by_crossings.setdefault(frozenset(pairs_using), set()).add(element)
        out: dict[Element, LinkClass] = {}
        for crossing, elements in by_crossings.items():
            link = LinkClass(self._name(elements, crossing), frozenset(elements), crossing)
            for element in elements:
                out[element] = link
        return out

    def _name(self, elements: set[Element], crossing: frozenset[LeafPair]) -> str:
        if len(crossing) == 1:
            a, b = next(iter(crossing))
            return f"{a}<->{b}"
        uplinks = sorted(name for kind, name in elements if kind == "uplink")
        spines = sorted(name for kind, name in elements if kind == "spine")
        if len(uplinks) == 1:
            return f"{uplinks[0]}<->{self.spine(uplinks[0])}"
        return ",".join(spines or uplinks)

    def classes_of(self, nodes: Iterable[str]) -> frozenset[LinkClass]:
        return frozenset(self.classes[e] for e in self.elements_of(nodes))
