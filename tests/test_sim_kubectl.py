"""The simulator's kubectl pastes come in the shapes real ones do, and the readers take each alike."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from acceptance.cli import main
from acceptance.errors import UsageError
from acceptance.sim.model import SimRunner, kubectl, load_scenario
from acceptance.tools import kubectl as reader
from tests.incident_logs import bundle_argv

DOWN, XID = "sim-node-05", "sim-node-07"
SHAPES = [",".join(c) for n in range(4) for c in itertools.combinations(("tabs", "no-heading", "no-events-header"), n)]


@pytest.fixture(scope="module")
def sim() -> SimRunner:
    return SimRunner.from_scenario(load_scenario("healthy-16"), [f"node-down@{DOWN}", f"gpu-xid@{XID}:3"], seed=1)


def _describe(sim: SimRunner, node: str, shape: str) -> str:
    return sim.run(["kubectl", "describe", "node", node], {kubectl.ENV: shape}, "sim-node-01", []).stdout


def _facts(text: str) -> tuple[Any, ...]:
    (node,) = reader.parse(text).nodes
    conditions = tuple((c.type, c.status, c.reason) for c in node.conditions)
    events = tuple((e.type, e.reason, e.last_seen, e.message) for e in node.events)
    return node.name, conditions, events, node.taints, node.allocatable_gpus


@pytest.mark.parametrize("shape", SHAPES)
def test_each_describe_shape_reads_as_the_plain_one(sim: SimRunner, shape: str) -> None:
    plain = _facts(_describe(sim, DOWN, ""))
    assert plain[1][-1] == ("Ready", "Unknown", "NodeStatusUnknown")
    assert ("Normal", "NodeNotReady", "110m", f"Node {DOWN} status is now: NodeNotReady") in plain[2]
    assert _facts(_describe(sim, DOWN, shape)) == plain


def test_the_shapes_are_what_real_pastes_show(sim: SimRunner) -> None:
    text = _describe(sim, DOWN, "tabs,no-heading,no-events-header")
    assert "Conditions:" not in text
    assert "  Ready \tUnknown \t" in text  # a blank before each TAB, as kubectl 1.7 printed it
    assert "  Type    Reason" not in text
    assert "Conditions:" in _describe(sim, DOWN, "")
    assert {kubectl.choose(s) for s in range(64)} == {
        kubectl.KubectlShape(t, h, e) for t in (True, False) for h in (True, False) for e in (True, False)
    }
    with pytest.raises(UsageError, match="sideways is not one of tabs, no-heading, no-events-header"):
        kubectl.choose(0, {kubectl.ENV: "sideways"})


@pytest.mark.parametrize("flags", [[], ["-A"], ["-o", "wide"], ["-A", "-o", "wide"]])
def test_get_events_columns_follow_the_flags_and_read_alike(sim: SimRunner, flags: list[str]) -> None:
    text = sim.run(["kubectl", "get", "events", *flags], {}, "sim-node-01", []).stdout
    head = text.splitlines()[0].split()
    assert (head[0] == "NAMESPACE") is ("-A" in flags)
    assert ("SUBOBJECT" in head) is ("wide" in flags)
    events = reader.parse(text).events
    xid = [e for e in events if e.reason == "GPUFallenOffTheBus"]
    assert [(e.type, e.object, e.last_seen) for e in xid] == [("Warning", f"node/{XID}", "109m")]
    assert "Xid (PCI:0000:48:00): 79" in xid[0].message
    assert all(e.last_seen_utc is None for e in events), "relative ages stay relative"
    assert {e.object for e in events if e.reason == "NodeNotReady"} == {f"node/{DOWN}"}


def _without_lines(value: Any) -> Any:
    """A record without the line numbers of the paste it came from (the shapes differ in line count)."""
    if isinstance(value, dict):
        return {k: _without_lines(v) for k, v in value.items() if k != "line"}
    if isinstance(value, list):
        return [_without_lines(v) for v in value]
    return value


def test_the_bundle_reads_the_same_node_evidence_from_every_shape(sim: SimRunner, tmp_path: Path) -> None:
    seen = []
    log = tmp_path / "job.log"
    log.write_text("training ...\n")
    for shape in ("", "tabs,no-heading,no-events-header"):
        paste = tmp_path / f"describe-{len(seen)}.txt"
        paste.write_text(f"$ kubectl describe node {DOWN}\n" + _describe(sim, DOWN, shape))
        out = tmp_path / f"b{len(seen)}"
        argv = bundle_argv(
            "--job-logs",
            str(log),
            "--evidence",
            f"{DOWN}={paste}",
            "--reports-dir",
            str(tmp_path / "r"),
            "--out",
            str(out),
        )
        assert main(argv) == 0
        doc = json.loads((out / "bundle.json").read_text())
        (node,) = [n for n in doc["node_evidence"] if n["node"] == DOWN]
        seen.append(_without_lines({k: v for k, v in node.items() if k not in ("source", "sources", "files")}))
    assert seen[0] == seen[1]
    assert any(c.get("type") == "Ready" and c.get("status") == "Unknown" for c in seen[0]["conditions"])
