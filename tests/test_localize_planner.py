"""The localization planner (acceptance.judge.localize): rounds and conclusions, by equality and by property."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acceptance.judge.localize import Conclusion, Problem, Round, conclude_now, next_step
from acceptance.judge.localize_explain import min_hitting_sets
from acceptance.judge.localize_groups import FAILED, OK, SLOW, GroupMeasure, Observation, PairReference, observe_round
from acceptance.judge.localize_plan import pair_set, screen
from acceptance.judge.localize_topology import Topology
from tests.localize_model import Faults, cluster, search

NODES, TOPO = cluster(16, 8)
N = {i: f"node-{i:04d}" for i in range(1, 17)}


def obs(number: int, *groups: tuple[tuple[int, ...], str, float | None]) -> list[Observation]:
    return [Observation(number, tuple(N[i] for i in g), status, ratio) for g, status, ratio in groups]


def test_two_leaves_under_one_spine_are_one_link_class_named_by_the_crossing() -> None:
    (link,) = TOPO.classes_of((N[1], N[9]))
    assert link.name == "leaf-01<->leaf-02"
    assert TOPO.classes_of((N[1], N[2])) == frozenset()


def test_with_more_leaves_uplinks_and_the_spine_are_told_apart() -> None:
    _, topo = cluster(32, 8)
    names = sorted(link.name for link in topo.classes_of(("node-0001", "node-0017")))
    assert names == ["leaf-01<->spine-01", "leaf-03<->spine-01", "spine-01"]


def test_topology_from_a_listing_and_from_labels_agree() -> None:
    listed = Topology.from_listing(["a", "b", "c"], {"l1": ["a", "b"], "l2": ["c"]}, {"s1": ["l1", "l2"]})
    labelled = Topology.from_labels({"a": {"leaf": "l1", "sp": "s1"}, "b": {"leaf": "l1", "sp": "s1"},
                                     "c": {"leaf": "l2", "sp": "s1"}}, "leaf", "sp")  # fmt: skip
    assert listed.leaf_of == labelled.leaf_of
    assert listed.spine_of == labelled.spine_of


def test_the_screen_pairs_every_node_across_leaves() -> None:
    assert screen(TOPO, NODES) == tuple((N[i], N[i + 8]) for i in range(1, 9))


def test_the_screen_spreads_pairs_over_leaf_pairs_and_puts_an_odd_node_in_a_triple() -> None:
    names, topo = cluster(13, 4)
    groups = screen(topo, names)
    assert sorted(n for g in groups for n in g) == sorted(names)
    assert [len(g) for g in groups].count(3) == 1
    crossings = {topo.leaves_of(g) for g in groups if len(g) == 2}
    assert len(crossings) >= 4


def test_the_handover_pairs_cover_every_node_inside_and_across_leaves() -> None:
    assert pair_set(TOPO, NODES) == (
        (N[1], N[2]), (N[3], N[4]), (N[9], N[10]), (N[11], N[12]),
        (N[5], N[13]), (N[6], N[14]), (N[7], N[15]), (N[8], N[16]),
    )  # fmt: skip


def test_groups_are_judged_against_the_pair_baseline_and_the_round() -> None:
    ref = PairReference({1 << 30: 100.0}, {1 << 30: 100.0})
    crossing = [(N[i], N[i + 8]) for i in range(1, 9)]
    values = [100.0, 99.5, 100.4, 94.5, 93.0, 100.2, 99.8, 100.1]
    measures = [GroupMeasure(g, {1 << 30: v}) for g, v in zip(crossing, values, strict=True)]
    measures.append(GroupMeasure((N[1], N[2]), {}, "run failed: NCCL failure", (N[2],)))
    judged = observe_round(1, measures, TOPO, 0.05, ref)
    assert [o.status for o in judged] == [OK, OK, OK, OK, SLOW, OK, OK, OK, FAILED]
    assert judged[4].detail == "93% of the pair baseline"
    assert judged[8].blamed == (N[2],)
    uniform = observe_round(1, [GroupMeasure(g, {1 << 30: 70.0}) for g in crossing], TOPO, 0.05, ref)
    assert {o.status for o in uniform} == {SLOW}


def test_one_bad_node_is_retested_with_known_good_peers_of_its_own_leaf_then_named() -> None:
    problem = Problem(NODES, TOPO)
    first = next_step(problem, [])
    assert isinstance(first, Round)
    assert first.number == 1
    seen = obs(1, *[((i, i + 8), SLOW if i == 7 else OK, 0.62 if i == 7 else 1.0) for i in range(1, 9)])
    second = next_step(problem, seen)
    assert isinstance(second, Round)
    assert second.groups == ((N[7], N[1]), (N[15], N[9]))
    seen += obs(2, ((7, 1), SLOW, 0.62), ((15, 9), OK, 0.99))
    done = next_step(problem, seen)
    assert isinstance(done, Conclusion)
    assert (done.culprit, done.culprit_kind, done.rounds, done.tests, done.confirmed) == (
        "node-0007",
        "nic",
        2,
        10,
        True,
    )
    assert done.summary == "node-0007: every group with it at 62% of the pair baseline (2/2), every other group ≥ 99%"
    assert done.evidence == (
        "round 1: 8 groups (8 across leaves): 7 within margin (100%); 1 bad: node-0007+node-0015 62%",
        "round 2: 2 groups (0 across leaves): 1 within margin (99%); 1 bad: node-0007+node-0001 62%",
    )


def test_a_slow_spine_is_confirmed_inside_the_leaves_and_names_no_node() -> None:
    problem = Problem(NODES, TOPO)
    seen = obs(1, *[((i, i + 8), SLOW, 0.7) for i in range(1, 9)])
    second = next_step(problem, seen)
    assert isinstance(second, Round)
    assert all(len(TOPO.leaves_of(g)) == 1 for g in second.groups)
    assert sorted(n for g in second.groups for n in g) == sorted(NODES)
    seen += [Observation(2, g, OK, 1.0) for g in second.groups]
    done = next_step(problem, seen)
    assert isinstance(done, Conclusion)
    assert (done.culprit, done.culprit_kind, done.rounds) == ("leaf-01<->leaf-02", "switch", 2)
    assert done.summary == (
        "leaf-01<->leaf-02: every group crossing it at 70% (8/8); groups inside one leaf within margin (8/8): "
        "fabric, not a node"
    )


def test_nothing_seen_after_a_failing_test_gets_new_pairs_once_then_no_culprit() -> None:
    problem = Problem(NODES, TOPO)
    seen = obs(1, *[((i, i + 8), OK, 1.0) for i in range(1, 9)])
    again = next_step(problem, seen)
    assert isinstance(again, Round)
    assert again.number == 2
    assert not {frozenset(g) for g in again.groups} & {frozenset(o.nodes) for o in seen}
    seen += [Observation(2, g, OK, 1.0) for g in again.groups]
    done = next_step(problem, seen)
    assert isinstance(done, Conclusion)
    assert done.culprit == "none"
    assert done.rounds == 2
    asked = next_step(Problem(NODES, TOPO, triggered=False), seen[:8])
    assert isinstance(asked, Conclusion)
    assert asked.culprit == "none"
    assert asked.rounds == 1


def test_a_node_the_tool_names_in_a_failed_group_is_the_culprit_at_once() -> None:
    seen = [Observation(1, (N[i], N[i + 8]), OK, 1.0) for i in range(1, 8)]
    seen.append(Observation(1, (N[8], N[16]), FAILED, None, (N[16],), "run failed: Test NCCL failure"))
    done = next_step(Problem(NODES, TOPO), seen)
    assert isinstance(done, Conclusion)
    assert (done.culprit, done.culprit_kind, done.rounds) == ("node-0016", "node", 1)


def test_a_node_that_is_not_ready_is_a_culprit_without_a_test() -> None:
    problem = Problem(NODES[:-1], TOPO, unavailable={N[16]: "NotReady"}, triggered=False)
    first = next_step(problem, [])
    assert isinstance(first, Round)
    assert N[16] not in {n for g in first.groups for n in g}
    done = next_step(problem, [Observation(1, g, OK, 1.0) for g in first.groups])
    assert isinstance(done, Conclusion)
    assert (done.culprit, done.culprit_kind) == ("node-0016", "node")
    assert done.summary.startswith("node-0016: NotReady (not tested); no culprit")


def test_an_intermittent_group_gets_one_repeat_then_no_single_culprit() -> None:
    problem = Problem(NODES, TOPO)
    seen = obs(1, *[((i, i + 8), SLOW if i == 1 else OK, 0.6 if i == 1 else 1.0) for i in range(1, 9)])
    second = next_step(problem, seen)
    assert isinstance(second, Round)
    seen += [Observation(2, g, OK, 1.0) for g in second.groups]
    third = next_step(problem, seen)
    assert isinstance(third, Round)
    assert third.purpose.endswith("(intermittent)")
    assert {n for g in third.groups for n in g} >= {N[1], N[9]}
    seen += [Observation(3, g, OK, 1.0) for g in third.groups]
    done = next_step(problem, seen)
    assert isinstance(done, Conclusion)
    assert (done.culprit, done.confirmed, done.intermittent, done.suspects) == ("none", False, True, (N[1], N[9]))
    assert done.summary.startswith("no single culprit after 3 rounds: intermittent")


def test_a_deadline_concludes_with_what_was_seen() -> None:
    seen = obs(1, *[((i, i + 8), SLOW if i == 7 else OK, 0.62 if i == 7 else 1.0) for i in range(1, 9)])
    done = conclude_now(Problem(NODES, TOPO), seen, "the search's deadline passed")
    assert (done.culprit, done.confirmed, done.suspects) == ("none", False, (N[7], N[15]))
    assert done.evidence[-1] == "the search's deadline passed"


def test_minimum_hitting_sets() -> None:
    sets = [frozenset({"a", "b"}), frozenset({"b", "c"}), frozenset({"d"})]
    assert min_hitting_sets(sets, 4) == [frozenset({"b", "d"})]
    assert min_hitting_sets([frozenset({"a", "b"}), frozenset({"c", "d"})], 1) == []
    assert min_hitting_sets([], 2) == [frozenset()]


# --- properties over simulated outcomes (tests/localize_model.py) ------------------------------

SCENARIOS = ("healthy", "one", "two", "spine", "leaf", "node+spine", "down")


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, int, int, Faults, int]:
    leaves = draw(st.integers(1, 6))
    per_leaf = draw(st.sampled_from([4, 6, 8, 16]))
    names, topo = cluster(leaves * per_leaf, per_leaf)
    scenario = draw(st.sampled_from(SCENARIOS if leaves > 1 else ("healthy", "one", "two", "down")))
    if scenario == "leaf" and leaves < 3:
        scenario = "spine"
    noise = draw(st.floats(0.001, 0.01))
    bad = draw(st.lists(st.sampled_from(names), min_size=2, max_size=2, unique=True))
    factor = draw(st.floats(0.3, 0.85))
    faults = {
        "healthy": Faults(noise=noise),
        "one": Faults(bad={bad[0]: factor}, noise=noise),
        "two": Faults(bad={bad[0]: factor, bad[1]: 0.62}, noise=noise),
        "spine": Faults(spine=factor, noise=noise),
        "leaf": Faults(uplinks={topo.leaf(bad[0]): factor}, noise=noise),
        "node+spine": Faults(bad={bad[0]: 0.62}, spine=max(factor, 0.5), noise=noise),
        "down": Faults(down=frozenset({bad[0]}), noise=noise),
    }[scenario]
    return scenario, leaves, per_leaf, faults, draw(st.integers(0, 2**32))


@pytest.mark.heavy
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_every_search_tests_disjoint_groups_and_never_names_a_false_culprit(
    case: tuple[str, int, int, Faults, int],
) -> None:
    _scenario, leaves, per_leaf, faults, seed = case
    names, topo = cluster(leaves * per_leaf, per_leaf)
    conclusion, _, rounds = search(Problem(names, topo), faults, seed)
    for step in rounds:
        members = [n for g in step.groups for n in g]
        assert len(members) == len(set(members))
        assert set(members) <= set(names)
        assert all(len(g) >= 2 for g in step.groups)
    bad_nodes = set(faults.bad) | set(faults.down)
    switch = [c.name for c in conclusion.culprits if c.kind == "switch"]
    nodes = {c.name for c in conclusion.culprits if c.kind != "switch"}
    assert nodes <= bad_nodes
    if faults.spine is None and not faults.uplinks:
        assert not switch
    for leaf in faults.uplinks:
        assert all(leaf in name for name in switch)


@pytest.mark.heavy
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_the_search_names_exactly_the_faults_within_the_targets(case: tuple[str, int, int, Faults, int]) -> None:
    scenario, leaves, per_leaf, faults, seed = case
    names, topo = cluster(leaves * per_leaf, per_leaf)
    conclusion, _, _ = search(Problem(names, topo), faults, seed)
    assert conclusion.confirmed
    nodes = {c.name for c in conclusion.culprits if c.kind != "switch"}
    switch = [c.name for c in conclusion.culprits if c.kind == "switch"]
    assert nodes == set(faults.bad) | set(faults.down)
    if scenario == "healthy":
        assert conclusion.culprit == "none"
    if scenario in ("one", "down"):
        assert conclusion.rounds <= 3
    if scenario == "two":
        assert conclusion.rounds <= 4
    if scenario in ("spine", "node+spine"):
        assert switch == (["leaf-01<->leaf-02"] if leaves == 2 else ["spine-01"])
    if scenario == "leaf":
        assert switch == [f"{next(iter(faults.uplinks))}<->spine-01"]
