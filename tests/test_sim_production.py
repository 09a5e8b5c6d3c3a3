"""The simulated production period after an acceptance: its faults' syntax, its series, its exposition."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import numpy as np
import pytest

from acceptance.errors import UsageError
from acceptance.profile import load_profile_file
from acceptance.sim.embedded import SimulatedCluster
from acceptance.sim.model.faultspec import SimFaults, parse_spec
from acceptance.sim.model.production import DEFAULT_FIELDS, FIELDS, Production
from acceptance.sim.model.production_faults import RecurrenceFault
from acceptance.sim.probation import sim_cluster
from acceptance.tools import prometheus, torchlogs
from tests.probation_support import sim_profile

NODES = [f"sim-node-{i:02d}" for i in range(1, 17)]
START = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("xid-recur@sim-node-07:3@6h", ("xid-recur", "sim-node-07", 3, 21600.0, 0.0)),
        ("slowdown-recur@2h+20m", ("slowdown-recur", None, None, 7200.0, 1200.0)),
        ("pcie-replay-recur@sim-node-04@9h+10m", ("pcie-replay-recur", "sim-node-04", None, 32400.0, 600.0)),
        ("scrape-gap@sim-node-07@2h+45m", ("scrape-gap", "sim-node-07", None, 7200.0, 2700.0)),
        ("scrape-gap@1h30m", ("scrape-gap", None, None, 5400.0, 2700.0)),
    ],
)
def test_fault_syntax(text: str, expect: tuple[object, ...]) -> None:
    f = parse_spec(text)
    assert isinstance(f, RecurrenceFault)
    assert (f.kind, f.node, f.gpu, f.offset_s, f.duration_s) == expect
    assert str(f) == text


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("xid-recur@sim-node-99:3@6h", "unknown node 'sim-node-99'"),
        ("xid-recur@sim-node-07:9@6h", "bad index '9' (0..7)"),
        ("xid-recur@6x", "'6x' is not a duration"),
        ("xid-recur", "expected an offset after the last '@'"),
        ("node-notready-recur@3h", "node-notready-recur needs a node"),
    ],
)
def test_bad_faults_say_the_form(text: str, problem: str) -> None:
    with pytest.raises(UsageError) as caught:
        SimFaults.parse([text]).check(NODES)
    assert problem in str(caught.value)
    assert "KIND[@NODE[:INDEX]][@OFFSET[+DURATION]]" in str(caught.value)


def test_acceptance_faults_are_not_recurrence_faults() -> None:
    faults = SimFaults.parse(["nic-degraded@sim-node-07", "xid-recur@sim-node-07:3@6h", "gpu-xid@sim-node-03:5"])
    assert [str(f) for f in faults.probation] == ["xid-recur@sim-node-07:3@6h"]
    assert [str(f) for f in faults.acceptance] == ["nic-degraded@sim-node-07:0", "gpu-xid@sim-node-03:5"]


def test_the_acceptance_time_simulator_leaves_recurrence_faults_to_criterion_5(tmp_path: object) -> None:
    profile = load_profile_file(sim_profile(tmp_path))  # type: ignore[arg-type]
    faults = SimFaults.parse(["xid-recur@sim-node-07:3@6h", "nic-degraded@sim-node-07"])
    cluster = SimulatedCluster.start(profile, faults.acceptance)
    try:
        assert [str(f) for f in cluster.runner.faults.faults] == ["nic-degraded@sim-node-07:0"]
    finally:
        cluster.close()


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Production:
    cluster = sim_cluster(load_profile_file(sim_profile(tmp_path_factory.mktemp("p"))))
    faults = SimFaults.parse(
        ("xid-recur@sim-node-07:3@6h", "pcie-replay-recur@sim-node-07:1@2h+10m", "scrape-gap@sim-node-07@9h+45m")
    ).probation
    return Production(cluster, ("sim-node-07",), START, 12 * 3600, faults)


def test_series_carry_each_fault(model: Production) -> None:
    offsets = model.offsets
    xid, present = model.gpu_series("sim-node-07", 3)
    assert set(xid["DCGM_FI_DEV_XID_ERRORS"][offsets < 6 * 3600]) == {0.0}
    assert set(xid["DCGM_FI_DEV_XID_ERRORS"][offsets >= 6 * 3600]) == {79.0}
    assert not present[offsets >= 6 * 3600 + 60].any(), "fallen off the bus: its series stop"
    pcie, _ = model.gpu_series("sim-node-07", 1)
    replays = pcie["DCGM_FI_DEV_PCIE_REPLAY_COUNTER"]
    during = (offsets >= 7200) & (offsets < 7800)
    assert replays[offsets >= 7800][0] - replays[offsets < 7200][-1] == pytest.approx(400)
    assert np.diff(replays[during]).max() == pytest.approx(10), "40 a minute at a 15 s scrape"
    _, other = model.gpu_series("sim-node-07", 0)
    gap = (offsets >= 9 * 3600) & (offsets < 9 * 3600 + 2700)
    assert not other[gap].any()
    assert other[~gap].all()
    _, steps, job_present = model.job_series()
    assert np.all(np.diff(steps[offsets >= 6 * 3600][job_present[offsets >= 6 * 3600]]) == 0), "the job hangs"


def test_exposition_has_dcgm_exporters_names_types_and_labels(model: Production) -> None:
    text = "".join(model.openmetrics())
    found = prometheus.parse(text, "period.om")
    assert found.format == prometheus.OPENMETRICS
    for name in DEFAULT_FIELDS:
        assert found.families[name].type == FIELDS[name][0]
        assert found.families[name].help == FIELDS[name][1]
    sample = next(s for s in found.samples if s.name == "DCGM_FI_DEV_GPU_TEMP")
    assert [k for k, _ in sample.labels] == [
        "gpu",
        "UUID",
        "pci_bus_id",
        "device",
        "modelName",
        "Hostname",
        "DCGM_FI_DRIVER_VERSION",
    ]
    node = model.cluster.node("sim-node-07")
    assert {s.label("UUID") for s in found.samples if s.name == "DCGM_FI_DEV_GPU_TEMP"} == {g.uuid for g in node.gpus}
    stamps = sorted({s.timestamp_ms for s in found.samples if s.name == "DCGM_FI_DEV_GPU_TEMP"})
    assert {b - a for a, b in itertools.pairwise(stamps)} == {15_000, 2_715_000}, "every 15 s, but the 45 min gap"
    assert found.families["job_steps_completed"].type == "counter"
    assert any(s.name == "job_steps_completed_total" for s in found.samples)


def test_rank_logs_hold_the_watchdog_timeouts_the_xid_causes(model: Production) -> None:
    logs = model.rank_logs()
    found = torchlogs.parse(logs["sim-node-07"], "sim-node-07.log", year=START.year)
    timeouts = [e for e in found.errors if e.kind == "watchdog-timeout"]
    assert [e.rank for e in timeouts] == list(range(8))
    assert timeouts[0].time == datetime(2026, 12, 1, 9, 10, 0, 81000)
    assert "OpType=ALLREDUCE" in timeouts[0].text
    assert "Timeout(ms)=600000" in timeouts[0].text
