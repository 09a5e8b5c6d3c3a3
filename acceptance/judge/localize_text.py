"""The words of a localization: one line per culprit an on-call engineer can act on, one per round.

"sim-node-07: every group with it at 61–63% of the pair baseline (2/2), every other group ≥ 98%";
"leaf-01<->leaf-02: every group crossing it at 69–71% (8/8); groups inside one leaf within margin
(8/8): fabric, not a node"; or "no single culprit" with what was seen. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from acceptance.judge.localize_explain import Explanation, Hypothesis
from acceptance.judge.localize_groups import FAILED, OK, SLOW, Observation
from acceptance.judge.localize_topology import LinkClass, Topology

SHOWN = 6


def _pct(x: float) -> str:
    return f"{x * 100:.0f}%"


def span(ratios: Sequence[float]) -> str:
    """``61–63%`` (or ``62%`` when they round alike)."""
    lo, hi = _pct(min(ratios)), _pct(max(ratios))
    return lo if lo == hi else f"{lo[:-1]}–{hi}"


def _group(o: Observation) -> str:
    return "+".join(o.nodes)


def _others(rest: Sequence[Observation]) -> str:
    if not rest:
        return ""
    bad = [o for o in rest if o.bad]
    if bad:
        return f", {len(bad)} other group{'s' if len(bad) > 1 else ''} bad too"
    ratios = [o.ratio for o in rest if o.ratio is not None]
    return f", every other group ≥ {_pct(min(ratios))}" if ratios else ""


def describe_rounds(topology: Topology, observations: Sequence[Observation]) -> list[str]:
    """One line per round: how many groups, which were bad and how bad, the range of the rest."""
    lines = []
    for number in sorted({o.round for o in observations}):
        groups = [o for o in observations if o.round == number]
        crossing = sum(topology.crosses(o.nodes) for o in groups)
        head = f"round {number}: {len(groups)} group{'s' if len(groups) != 1 else ''} ({crossing} across leaves)"
        fine = [o.ratio for o in groups if o.status == OK and o.ratio is not None]
        bad = sorted((o for o in groups if o.bad), key=lambda o: (o.ratio is not None, o.ratio or 0.0))
        parts = []
        if fine:
            parts.append(f"{len(fine)} within margin ({span(fine)})")
        if bad:
            shown = ", ".join(
                f"{_group(o)} {'failed: ' + o.detail if o.status == FAILED else _pct(o.ratio or 0.0)}"
                for o in bad[:SHOWN]
            )
            more = f" (+{len(bad) - SHOWN} more)" if len(bad) > SHOWN else ""
            parts.append(f"{len(bad)} bad: {shown}{more}")
        lines.append(head + ": " + "; ".join(parts))
    return lines


def describe_none(observations: Sequence[Observation], triggered: bool) -> str:
    if not observations:
        return "no culprit: nothing to test"
    ratios = [o.ratio for o in observations if o.ratio is not None]
    rounds = len({o.round for o in observations})
    plural = "s" * (rounds > 1)
    text = f"no culprit: every group within the margin ({len(observations)} groups in {rounds} round{plural}"
    text += f", ≥ {_pct(min(ratios))})" if ratios else ")"
    if triggered:
        text += "; the failure did not show in groups: it needs the full node set, or it is intermittent"
    return text


def _hypothesis(h: Hypothesis) -> str:
    return "+".join([*sorted(h.nodes), *sorted(link.name for link in h.links)]) or "nothing"


def describe_unsure(
    topology: Topology, observations: Sequence[Observation], expl: Explanation
) -> tuple[str, tuple[str, ...]]:
    """'no single culprit' with what was seen, and the suspects (nodes and links) left."""
    bad = [o for o in observations if o.bad]
    rounds = len({o.round for o in observations})
    if not expl.hypotheses:
        inside = [o for o in observations if not topology.crosses(o.nodes)]
        bad_inside = sum(o.bad for o in inside)
        crossing = len(observations) - len(inside)
        where = f"{len(bad) - bad_inside} of {crossing} crossing groups and {bad_inside} of {len(inside)} inside a leaf"
        verdict = (
            "the fabric between leaves (more links than one), not a node"
            if inside and not bad_inside
            else "fabric-wide, or more than a few nodes"
        )
        return f"no single culprit: {where} bad in {rounds} round{'s' * (rounds > 1)}: {verdict}", ()
    options = [_hypothesis(h) for h in expl.hypotheses]
    suspects = tuple(dict.fromkeys(
        [*sorted({n for h in expl.hypotheses for n in h.nodes}),
         *sorted({link.name for h in expl.hypotheses for link in h.links})]))  # fmt: skip
    shown = " or ".join(options[:4]) + (f" (+{len(options) - 4} more)" if len(options) > 4 else "")
    what = "intermittent: the same nodes were also seen fine; " if expl.intermittent else ""
    return f"no single culprit after {rounds} round{'s' * (rounds > 1)}: {what}{shown}", suspects


def _node_line(
    node: str, observations: Sequence[Observation], needs: Sequence[Observation], rest: Sequence[Observation],
    known: Mapping[str, str],
) -> tuple[str, str, str]:  # fmt: skip
    mine = [o for o in observations if node in o.nodes]
    bad = [o for o in mine if o in needs]
    failed = [o for o in bad if o.status == FAILED]
    every = "every group" if len(bad) == len(mine) else f"{len(bad)} of {len(mine)} groups"
    if failed:
        why = f"{node}: {every} with it failed ({len(bad)}/{len(mine)}): {failed[0].detail}"
    else:
        ratios = [o.ratio for o in bad if o.ratio is not None]
        why = f"{node}: {every} with it at {span(ratios)} of the pair baseline ({len(bad)}/{len(mine)})"
    why += _others(rest)
    if node in known:
        why += f"; before the search: {known[node]}"
    kind = "node" if failed or node in known else "nic"
    return node, kind, why


def _link_line(topology: Topology, link: LinkClass, observations: Sequence[Observation]) -> tuple[str, str, str]:
    crossing = [o for o in observations if link in topology.classes_of(o.nodes)]
    slow = [o.ratio for o in crossing if o.status == SLOW and o.ratio is not None]
    inside = [o for o in observations if not topology.crosses(o.nodes)]
    avoiding = [o for o in observations if topology.crosses(o.nodes) and link not in topology.classes_of(o.nodes)]
    why = f"{link.name}: every group crossing it at {span(slow)} ({len(slow)}/{len(crossing)})"
    ok_inside = [o for o in inside if o.status == OK]
    if inside:
        why += f"; groups inside one leaf within margin ({len(ok_inside)}/{len(inside)})"
    if avoiding:
        ok_avoiding = sum(o.status == OK for o in avoiding)
        why += f"; groups crossing other links within margin ({ok_avoiding}/{len(avoiding)})"
    return link.name, "switch", why + ": fabric, not a node"


def describe_culprits(
    topology: Topology, observations: Sequence[Observation], expl: Explanation, h: Hypothesis, known: Mapping[str, str]
) -> list[tuple[str, str, str]]:
    """(name, kind, why) for each node, then each link, of the concluded hypothesis."""
    needs = expl.needs[h]
    out = []
    for node in sorted(h.nodes):
        rest = [
            o for o in observations
            if not set(o.nodes) & h.nodes and not topology.classes_of(o.nodes) & h.links
        ]  # fmt: skip
        out.append(_node_line(node, observations, needs, rest, known))
    others = [o for o in observations if not set(o.nodes) & h.nodes]
    out += [_link_line(topology, link, others) for link in sorted(h.links, key=lambda link: link.name)]
    return out
