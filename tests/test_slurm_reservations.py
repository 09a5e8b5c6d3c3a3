"""Reservations in the Slurm preflight: ``scontrol show reservation`` read (real 22.05.8 output), a node held by
a reservation that is not the profile's named with the reservation's flags and window, and the profile's own
reservation used; end to end against the simulated Slurm with the ``node-reserved@NODE`` fault."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from acceptance.clusters.slurm import reservations
from acceptance.clusters.slurm.cluster import SlurmCluster
from acceptance.clusters.slurm.simulated import SimulatedSlurmCluster
from acceptance.errors import ParseError, UsageError
from acceptance.profile import load_profile_file
from acceptance.sim.model.faultspec import SchedulerFault, SimFaults
from acceptance.tools import slurm
from tests.shared import FIXTURES
from tests.slurm_support import NEEDS_SLURM, sim_slurm_profile


def fixture(name: str) -> str:
    return (FIXTURES / "slurm" / name).read_text()


def _both() -> tuple[tuple[slurm.Reservation, ...], ...]:
    return tuple(slurm.parse_reservations(fixture(f"scontrol{o}-show-reservation-maint-and-future-22.05.8.txt"))[0]
                 for o in ("", "-o"))  # fmt: skip


def test_real_reservations_read_the_same_from_both_forms() -> None:
    multi, one_line = _both()
    assert multi == tuple(dataclasses.replace(r, line=m.line) for r, m in zip(one_line, multi, strict=True))
    maint, future = multi
    assert (maint.name, maint.state, maint.nodes, maint.flags) == (
        "maint-sim-node-02", "ACTIVE", ("sim-node-02",), ("MAINT", "SPEC_NODES"))  # fmt: skip
    assert maint.window == "2026-12-02T17:11:35 to 2026-12-02T19:11:35 (02:00:00)"
    assert maint.users == ("root",)
    assert (maint.accounts, maint.partition) == ((), None)
    assert (future.state, future.nodes, future.flags) == ("INACTIVE", ("sim-node-01", "sim-node-03"),
                                                          ("IGNORE_JOBS", "SPEC_NODES"))  # fmt: skip
    assert future.fields["CoreCnt"] == "16"


def test_no_reservations_is_none_and_other_text_is_refused() -> None:
    assert slurm.parse_reservations(fixture("scontrol-show-reservation-none-22.05.8.txt")) == ((), ())
    with pytest.raises(ParseError, match=r"resv.txt:1: expected .*ReservationName="):
        slurm.parse_reservations("scontrol: error: Invalid user for SlurmUser\n", "resv.txt")


def test_a_reserved_node_s_state_reads_as_usable_so_the_reservation_must_be_asked() -> None:
    """Slurm's own node state of a MAINT-reserved node is IDLE+MAINTENANCE+RESERVED, which the node check
    passes: only the reservations say the acceptance's jobs would wait."""
    [node] = slurm.parse_nodes(fixture("scontrol-o-show-node-maintenance-reserved-22.05.8.txt")).nodes
    assert node.state.flags == ("MAINTENANCE", "RESERVED")
    assert node.state.usable


NOW = datetime(2026, 12, 2, 17, 20, 0)
NODES = ("sim-node-01", "sim-node-02", "sim-node-03")


def test_a_node_in_another_reservation_is_blocked_naming_it_its_flags_and_window() -> None:
    multi, _ = _both()
    held = reservations.blocked(NODES, multi, None, NOW)
    assert set(held) == {"sim-node-01", "sim-node-02", "sim-node-03"}  # the future one starts within 4 h
    assert held["sim-node-02"].startswith(
        "in reservation maint-sim-node-02 (flags MAINT,SPEC_NODES; ACTIVE 2026-12-02T17:11:35 to "
        "2026-12-02T19:11:35 (02:00:00); users root), not the profile's"
    )
    assert "slurm.reservation" in held["sim-node-02"]
    assert "reservation future (flags IGNORE_JOBS,SPEC_NODES; INACTIVE 2026-12-02T18:11:35" in held["sim-node-01"]
    later = reservations.blocked(NODES, multi, None, NOW, horizon_s=600)
    assert set(later) == {"sim-node-02"}


def test_the_profile_s_reservation_is_used_and_must_hold_every_node() -> None:
    multi, _ = _both()
    held = reservations.blocked(NODES, multi, "maint-sim-node-02", NOW)
    assert set(held) == {"sim-node-01", "sim-node-03"}
    assert held["sim-node-01"].startswith("not in reservation maint-sim-node-02 (flags MAINT")
    missing = reservations.blocked(NODES, multi, "maint-inc1234", NOW)
    assert missing["sim-node-02"] == (
        "reservation maint-inc1234 of the profile (slurm.reservation) is not on the "
        "cluster (scontrol show reservation lists: maint-sim-node-02, future)"
    )
    waiting = reservations.blocked(("sim-node-01",), multi, "future", NOW)
    assert "has not started: jobs wait for it" in waiting["sim-node-01"]


def test_node_reserved_is_a_slurm_fault_that_names_a_node_of_the_profile() -> None:
    faults = SimFaults.parse(["node-reserved@sim-node-02", "nic-degraded@sim-node-01"])
    assert faults.scheduler == (SchedulerFault("node-reserved", "sim-node-02"),)
    assert [str(f) for f in faults.acceptance] == ["nic-degraded@sim-node-01:0"]
    with pytest.raises(UsageError, match=r"'node-reserved@elsewhere': unknown node 'elsewhere'"):
        SimFaults(SimFaults.parse(["node-reserved@elsewhere"]).scheduler).check(NODES)
    with pytest.raises(UsageError, match=r"node-reserved needs a node"):
        SimFaults.parse(["node-reserved"])


# ---- end to end: the simulated Slurm with a MAINT reservation on one node ------------------------------------


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimulatedSlurmCluster]:
    base: Path = tmp_path_factory.mktemp("slurm-resv")
    profile = load_profile_file(sim_slurm_profile(base, nodes=3) / "cluster.yaml")
    cluster = SimulatedSlurmCluster.start(
        profile, "ra-20261202T0000-resv", SimFaults.parse(["node-reserved@sim-node-02"])
    )
    try:
        yield cluster
    finally:
        cluster.close()


@NEEDS_SLURM
@pytest.mark.slow
def test_a_maint_reservation_on_a_returned_node_fails_the_preflight_naming_it(sim: SimulatedSlurmCluster) -> None:
    inventory = sim.inventory()
    by_name = {n.name: n for n in inventory.nodes}
    assert by_name["sim-node-01"].ready
    assert by_name["sim-node-03"].ready
    reserved = by_name["sim-node-02"]
    assert not reserved.ready
    said = reserved.conditions["Ready"]
    assert said.startswith("in reservation sim-maint-sim-node-02 (flags MAINT,SPEC_NODES; ACTIVE ")
    assert " to " in said
    assert "(1-00:00:00)" in said
    assert reserved.conditions["Slurm"].startswith("IDLE")  # Slurm flags it RESERVED only a moment later


@NEEDS_SLURM
@pytest.mark.slow
def test_the_profile_s_reservation_is_where_the_jobs_run(sim: SimulatedSlurmCluster) -> None:
    """With slurm.reservation naming it, the reserved node is Ready (its inventory step ran inside the
    reservation) and the nodes outside it are not."""
    settings = dataclasses.replace(sim.settings, reservation="sim-maint-sim-node-02")
    inside = SlurmCluster(sim.profile, "ra-20261202T0000-resv2", sim.transport, settings)
    by_name = {n.name: n for n in inside.inventory().nodes}
    assert by_name["sim-node-02"].ready, by_name["sim-node-02"].conditions
    assert by_name["sim-node-02"].allocatable_gpus == 8
    assert not by_name["sim-node-01"].ready
    assert by_name["sim-node-01"].conditions["Ready"].startswith("not in reservation sim-maint-sim-node-02 (flags")
