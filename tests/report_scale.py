"""Report data of a large simulated cluster, built without running the suite (a 1024-node run is too slow).

Every DCGM verdict is what `judge.diagnostics.judge_node` says of the simulator's `dcgmi diag -r 3 -j`
output: the faulty nodes are simulated and judged one by one; a healthy node's verdict is judged once
and given each healthy node's name (their outputs differ only in the name and serial numbers).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from acceptance.judge.diagnostics import judge_node, policy_for
from acceptance.judge.verdict import Status, Verdict
from acceptance.report.data import ReportData, TestRecord, verdict_payload
from acceptance.sim.model.cluster import node_name
from acceptance.sim.model.runner import SimRunner
from acceptance.sim.model.scenario import Scenario
from acceptance.tools import dcgm

DCGM_ARGV = ["dcgmi", "diag", "-r", "3", "-j"]


def node_names(n: int) -> list[str]:
    """The simulator's names for an `n`-node cluster (sim-node-0001 ... at 1024)."""
    return [node_name(i, n) for i in range(n)]


def evidence_files(n: int) -> list[str]:
    """The DCGM evidence an `n`-node run writes in its report folder: output, result, events, manifest per node."""
    kinds = (("outputs", "log"), ("results", "json"), ("events", "json"), ("manifests", "yaml"))
    return [f"{kind}/dcgm/{node}.{ext}" for node in node_names(n) for kind, ext in kinds]


def dcgm_payloads(n: int, faults: Sequence[str]) -> list[dict[str, object]]:
    """Criterion 1's verdict payload per node of an `n`-node simulated cluster with `faults`."""
    runner = SimRunner.from_scenario(Scenario(nodes=n, nodes_per_leaf=16), faults, 1)
    names = node_names(n)
    faulty = {f.split("@", 1)[1].split(":", 1)[0] for f in faults if "@" in f}
    healthy = next(name for name in names if name not in faulty)
    reference = dcgm.parse(runner.run(DCGM_ARGV, {}, healthy, []).stdout)

    def judged(node: str) -> dict[str, object]:
        result = runner.run(DCGM_ARGV, {}, node, [])
        verdict = judge_node(node, dcgm.parse(result.stdout), reference, 8, policy_for("isolate"),
                             result.exit_code, level=3, reference_level=3)  # fmt: skip
        return verdict_payload(verdict)

    template = json.dumps(judged(healthy))
    return [judged(name) if name in faulty else json.loads(template.replace(healthy, name)) for name in names]


def scale_report(n: int, faults: Sequence[str]) -> ReportData:
    """A judged run of `n` nodes: preflight and fabric passed, DCGM per node as simulated."""
    passed = [
        TestRecord(f"acceptance/test_preflight.py::{name}", "passed", 0.1, "",
                   (verdict_payload(Verdict(Status.PASS, name, f"{name}: as agreed")),))
        for name in ("test_cluster_answers", "test_node_set_ready", "test_versions_as_agreed")
    ]  # fmt: skip
    dcgm_tests = []
    for payload in dcgm_payloads(n, faults):
        outcome = "passed" if payload["status"] == "pass" else "failed"
        node = payload["subject"]
        nodeid = f"acceptance/test_gpu_diagnostics.py::test_dcgm_diagnostics[{node}]"
        dcgm_tests.append(TestRecord(nodeid, outcome, 1.0, "", (payload,)))
    later = [
        TestRecord(nodeid, "passed", 1.0, "", (verdict_payload(Verdict(Status.PASS, subject, summary)),))
        for nodeid, subject, summary in (
            ("acceptance/test_fabric.py::test_nccl_busbw[all_reduce_perf]", "all_reduce_perf", "busbw within 2%"),
            ("acceptance/test_smoke_step.py::test_smoke_step_time", "smoke step time", "median step 1.00x baseline"),
            ("acceptance/test_loss_continuity.py::test_loss_continuity", "loss continuity", "no jump after restore"),
        )
    ]
    provenance = {"cluster": f"sim-{n}", "start_utc": "2026-12-01T00:00:00+00:00", "end_utc": "2026-12-01T00:40:00Z"}
    return ReportData(provenance, (*passed, *dcgm_tests, *later), simulated=True)
