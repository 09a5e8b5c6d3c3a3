"""The simulator's `dcgmi diag` output (JSON and text) parses and is judged like the real tool's."""

from __future__ import annotations

import random

import pytest

from acceptance.cmd.parse_dcgm import read_dcgm
from acceptance.judge.diagnostics import DiagnosticsPolicy, judge_node
from acceptance.judge.verdict import Status
from acceptance.sim.model import cluster as sim_cluster
from acceptance.sim.model import dcgmmodel, dcgmrender
from acceptance.sim.model.faultspec import parse_fault
from acceptance.tools.dcgm import parse


def _run(level: int, fault: str | None = None):  # type: ignore[no-untyped-def]
    cluster = sim_cluster.build_cluster(4)
    node = cluster.nodes[2]
    faults = [parse_fault(f"{fault}@{node.name}:5", cluster)] if fault else []
    return node.name, dcgmmodel.run_diag(
        node, level, faults=faults, dcgm_version="4.4.1", driver="570.172.08", r=random.Random(7)
    )


@pytest.mark.parametrize("render", ["render_json", "render_text"])
@pytest.mark.parametrize("level", [1, 2, 3, 4])
def test_a_clean_simulated_node_passes_at_every_level(render: str, level: int) -> None:
    name, run = _run(level)
    report = parse(getattr(dcgmrender, render)(run))
    assert report.status == "pass"
    assert report.dcgm_version == "4.4.1"
    assert sorted(report.gpus) == list(range(8))
    v = judge_node(name, report, report, 8, DiagnosticsPolicy(), exit_code=run.exit_code, level=level)
    assert v.status is Status.PASS


@pytest.mark.parametrize("render", ["render_json", "render_text"])
@pytest.mark.parametrize("fault", ["gpu-xid", "ecc-dbe", "gpu-throttle"])
def test_a_simulated_gpu_fault_fails_naming_the_gpu(render: str, fault: str) -> None:
    name, run = _run(3, fault)
    _, clean = _run(3)
    report = parse(getattr(dcgmrender, render)(run))
    assert report.gpus[5] == "fail"
    v = judge_node(name, report, parse(dcgmrender.render_json(clean)), 8, DiagnosticsPolicy(),
                   exit_code=run.exit_code, level=3, reference_level=3)  # fmt: skip
    assert v.status is Status.FAIL
    assert v.summary.startswith(f"{name} GPU 5: ")


def test_fixture_and_simulator_agree_on_the_shape() -> None:
    """Our 4.x fixture and the simulator's JSON produce the same test names in the same order."""
    from tests.shared import FIXTURES

    fixture = read_dcgm(FIXTURES / "dcgm" / "dcgm-4.4.1-r3-json-8gpu-h200-pass.json")
    _, run = _run(3)
    simulated = parse(dcgmrender.render_json(run))
    assert sorted(t.name for t in simulated.tests) == sorted(t.name for t in fixture.tests)
