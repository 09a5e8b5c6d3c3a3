"""The DCGM heatmap's cells (by equality), its layout from 16 to 1024 nodes, and the evidence links of failures."""

from __future__ import annotations

import re
from typing import Any

import pytest

from acceptance.report import heatmap_html
from acceptance.report.evidence_links import EvidenceIndex
from acceptance.report.heatmap import Cell, build, natural_key, of_report
from tests.report_scale import node_names, scale_report

COLUMNS = ["node", "gpu", "test", "status", "handover"]


def dcgm(node: str, statuses: dict[tuple[int, str], str], status: str = "pass") -> dict[str, Any]:
    rows = [[node, gpu, test, st, "pass"] for (gpu, test), st in statuses.items()]
    return {"status": status, "subject": node, "summary": "", "figures": {"node": node, "level": 3},
            "evidence": [], "table": {"columns": COLUMNS, "rows": rows}}  # fmt: skip


FILES = [
    "outputs/dcgm/n10.log", "results/dcgm/n10.json", "events/dcgm/n10.json", "manifests/dcgm/n10.yaml",
    "outputs/dcgm/n2.log", "outputs/dcgm/n3.log", "outputs/nccl/all_reduce_perf.log",
    "results/nccl/all_reduce_perf.json", "placement/all_reduce_perf.json", "localize.json",
    "outputs/training/smoke.log", "outputs/training/pre-incident.log", "junit.xml",
]  # fmt: skip


def test_cells_are_the_worst_status_of_the_nodes_gpus() -> None:
    verdicts = [
        dcgm("n10", {(0, "pcie"): "pass", (1, "pcie"): "pass", (0, "memory"): "pass", (1, "memory"): "pass"}),
        dcgm("n2", {(0, "pcie"): "fail", (1, "pcie"): "warn", (0, "memory"): "pass", (1, "memory"): "skip"}, "fail"),
        dcgm("n3", {(0, "pcie"): "pass", (1, "pcie"): "pass"}, "fail"),  # memory did not run on n3
    ]
    heatmap = build(verdicts, FILES)
    assert heatmap.tests == ("pcie", "memory")
    assert heatmap.nodes == ("n2", "n3", "n10")  # natural order
    assert heatmap.cells == {
        ("n2", "pcie"): Cell("n2", "pcie", "fail", (("fail", ("0",)), ("warn", ("1",))), 2, "outputs/dcgm/n2.log"),
        ("n2", "memory"): Cell("n2", "memory", "skip", (("skip", ("1",)),), 2, "outputs/dcgm/n2.log"),
        ("n3", "pcie"): Cell("n3", "pcie", "pass", (), 2, None),
        ("n3", "memory"): Cell("n3", "memory", "missing", (("missing", ("0", "1")),), 2, "outputs/dcgm/n3.log"),
        ("n10", "pcie"): Cell("n10", "pcie", "pass", (), 2, None),
        ("n10", "memory"): Cell("n10", "memory", "pass", (), 2, None),
    }
    assert heatmap.cells[("n2", "pcie")].label == "fail: GPU 0; warn: GPU 1"
    assert heatmap.cells[("n10", "pcie")].label == "pass ×2"
    assert [c.node for c in heatmap.not_passed("memory")] == ["n2", "n3"]


def test_a_failed_node_without_a_table_is_missing_in_every_test() -> None:
    """A node whose DCGM never ran still shows, so the map never hides the worst node."""
    down = {"status": "error", "subject": "n9", "summary": "unschedulable", "figures": {"node": "n9"},
            "evidence": [], "table": {"columns": [], "rows": []}}  # fmt: skip
    heatmap = build([dcgm("n1", {(0, "pcie"): "pass"}), down], ["outputs/dcgm/n9.log"])
    assert heatmap.nodes == ("n1", "n9")
    assert heatmap.cells[("n9", "pcie")] == Cell("n9", "pcie", "missing", (), 0, "outputs/dcgm/n9.log")
    assert heatmap.cells[("n9", "pcie")].label == "missing: no result"


def test_natural_order() -> None:
    assert sorted(["gpu-10", "gpu-9", "gpu-100", "a"], key=natural_key) == ["a", "gpu-9", "gpu-10", "gpu-100"]


def test_evidence_of_each_criterion_is_found_by_group_and_subject_log_first() -> None:
    index = EvidenceIndex(FILES)
    assert index.of(1, {"subject": "n10", "figures": {"node": "n10"}}) == (
        "outputs/dcgm/n10.log", "results/dcgm/n10.json", "events/dcgm/n10.json", "manifests/dcgm/n10.yaml",
    )  # fmt: skip
    fabric = {"subject": "all_reduce_perf", "figures": {"localize_rounds": 2}}
    assert index.of(2, fabric) == (
        "outputs/nccl/all_reduce_perf.log", "results/nccl/all_reduce_perf.json", "placement/all_reduce_perf.json",
        "localize.json",
    )  # fmt: skip
    assert index.of(2, {"subject": "all_reduce_perf", "figures": {}})[-1] == "placement/all_reduce_perf.json"
    assert index.of(3, {"subject": "smoke step time"}) == ("outputs/training/smoke.log",)
    assert index.of(4, {"subject": "loss"}) == ("outputs/training/pre-incident.log", "outputs/training/smoke.log")
    assert index.of(0, {"subject": "nodes"}) == ()
    assert index.of(1, {"subject": "n11"}) == ()
    assert EvidenceIndex(["outputs/site/ib/n1.log", "outputs/dcgm/n1.log"]).of(None, {"subject": "n1"}) == (
        "outputs/site/ib/n1.log",
    )


def test_sixteen_nodes_are_labelled_cells_in_one_row_per_test() -> None:
    verdicts = [dcgm(f"sim-node-{i:02d}", {(g, "pcie"): "pass" for g in range(8)}) for i in range(1, 17)]
    verdicts[2] = dcgm("sim-node-03", {(g, "pcie"): "fail" if g == 5 else "pass" for g in range(8)}, "fail")
    html = heatmap_html.render(build(verdicts, ["outputs/dcgm/sim-node-03.log"]))
    assert re.findall(r"<i title=\"sim-node-\d+\">(\d+)</i>", html) == [f"{i:02d}" for i in range(1, 17) if i != 3]
    assert '<a class="fail" href="outputs/dcgm/sim-node-03.log" title="sim-node-03: fail: GPU 5">03</a>' in html
    assert '<a href="outputs/dcgm/sim-node-03.log">sim-node-03 (fail: GPU 5)</a>' in html  # named beside its row
    assert html.count('class="hm-row"') == 1
    assert "1 of 16 nodes did not pass" in html
    for status in ("pass", "fail", "warn", "skip", "missing"):
        assert f'<i class="{status}"></i>{status}' in html  # the legend


@pytest.fixture(scope="module")
def big() -> Any:
    faults = ["gpu-xid@sim-node-0005:2", "gpu-throttle@sim-node-0700:3", "ecc-dbe@sim-node-1000:6"]
    files = [f"outputs/dcgm/{n}.log" for n in node_names(1024)]
    return of_report(scale_report(1024, faults), files)


def test_1024_nodes_are_16_rows_of_64_squares_per_test_with_the_failures_named(big: Any) -> None:
    assert len(big.nodes) == 1024
    assert big.tests == ("software", "memory", "diagnostic", "nvbandwidth", "pcie", "memory_bandwidth",
                         "targeted_stress", "targeted_power")  # fmt: skip
    assert {c.node for t in big.tests for c in big.not_passed(t)} == {"sim-node-0005", "sim-node-0700", "sim-node-1000"}
    assert big.cells[("sim-node-0005", "software")].label == "fail: GPU 2"
    assert big.cells[("sim-node-0005", "software")].link == "outputs/dcgm/sim-node-0005.log"
    html = heatmap_html.render(big)
    assert html.count('class="hm-row"') == 16 * len(big.tests)
    assert html.count("<i title=") == sum(1 for c in big.cells.values() if c.passed)
    assert '<span class="hm-row" title="sim-node-0961">' in html  # each row headed by its first node
    assert '<a href="outputs/dcgm/sim-node-0005.log">sim-node-0005 (fail: GPU 2)</a>' in html
    assert "--cols:64;--w:10px" in html
    print(f"heatmap HTML at 1024 nodes x {len(big.tests)} tests: {len(html):,} bytes")
