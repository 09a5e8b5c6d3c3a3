"""Criterion 5's cluster signals on Slurm: node state changes over the window (slurmctld's log without slurmdbd,
``sacctmgr show event`` with it), jobs ended by a node failure, sacct job end states; read from real 22.05.8
output and end to end against the simulated Slurm, where a node that went down and came back during the
window is a recurrence although its state now is IDLE."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from acceptance.clusters.base import NODE_NOT_READY, NODE_PROBLEM
from acceptance.clusters.slurm import signals
from acceptance.clusters.slurm.simulated import SimulatedSlurmCluster
from acceptance.judge.recurrence import judge_cluster
from acceptance.judge.recurrence_rules import RecurrenceRules, Window
from acceptance.profile import load_profile_file
from acceptance.sim.model.faultspec import SimFaults
from acceptance.tools import slurm
from tests.shared import FIXTURES
from tests.slurm_support import NEEDS_SLURM, sim_slurm_profile
from tests.test_slurm_parse import SACCT_FIELDS, corpus


def test_real_slurmctld_log_node_changes_drain_failure_requeue_and_back() -> None:
    lines, problems = slurm.parse_log((FIXTURES / "slurm" / "slurmctld-log-drain-node-failure-requeue-22.05.8.log")
                                      .read_text())  # fmt: skip
    assert problems == ()
    changes = [(c.time, c.node, c.kind, c.state, c.reason, c.job) for c in slurm.node_changes(lines)]
    assert changes == [
        ("2026-12-02T17:11:35.249", "sim-node-03", "down", "DRAINED", "test drain reason", None),
        ("2026-12-02T17:11:55.519", "sim-node-01", "job_node_fail", "NODE_FAIL",
         "job 1 requeued: node sim-node-01 failed", "1"),
        ("2026-12-02T17:11:55.519", "sim-node-01", "job_node_fail", "NODE_FAIL",
         "job 2 requeued: node sim-node-01 failed", "2"),
        ("2026-12-02T17:11:55.519", "sim-node-01", "down", "DOWN", "not responding", None),
        ("2026-12-02T17:11:55.777", "sim-node-01", "up", "RESPONDING", None, None),
        ("2026-12-02T17:11:55.777", "sim-node-01", "up", "RETURNED", None, None),
        ("2026-12-02T17:12:03.751", "sim-node-03", "up", "IDLE", None, None),
    ]  # fmt: skip


def test_a_not_responding_hostlist_names_every_node_and_a_killed_job_its_node() -> None:
    lines, _ = slurm.parse_log("[2026-12-02T03:00:01.000] error: Nodes gpu[07-08] not responding\n"
                               "[2026-12-02T03:00:02.000] Killing JobId=77 on failed node gpu07\n")  # fmt: skip
    changes = [(c.node, c.kind, c.state, c.reason) for c in slurm.node_changes(lines)]
    assert changes == [("gpu07", "down", "NOT_RESPONDING", "not responding"),
                       ("gpu08", "down", "NOT_RESPONDING", "not responding"),
                       ("gpu07", "job_node_fail", "NODE_FAIL", "job 77 killed: node gpu07 failed")]  # fmt: skip


def test_slurmdbd_node_events_become_not_ready_events_in_utc() -> None:
    """Rows in the shape of `event_query` (sacctmgr's --parsable2 --noheader with our Format=), written by hand:
    no slurmdbd runs here."""
    text = ("gpu07|2026-12-02T10:00:00|2026-12-02T11:30:00|DOWN|Xid 79 GPU fell off the bus|slurm\n"
            "|2026-12-02T09:00:00|Unknown|UP||root\n"
            "gpu07|2026-12-02T12:00:00|Unknown|DRAIN|ECC DBE|ops\n")  # fmt: skip
    changes, problems = slurm.parse_events(text)
    assert problems == ()
    assert [(c.node, c.state, c.until) for c in changes] == [("gpu07", "DOWN", "2026-12-02T11:30:00"),
                                                             ("gpu07", "DRAIN", None)]  # fmt: skip
    event = signals.change_event(changes[0], timezone(timedelta(hours=1)), "sacctmgr event")
    assert event is not None
    assert event.time == datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
    assert event.reason == NODE_NOT_READY
    assert event.message == ("Slurm state DOWN: Reason=Xid 79 GPU fell off the bus (set by slurm), until "
                             "2026-12-02T11:30:00 (sacctmgr event)")  # fmt: skip
    assert slurm.event_query(["gpu07"], "2026-12-02T09:00:00")[-1] == "Format=NodeName,Start,End,State,Reason,User"


def test_sacct_job_end_states_on_the_nodes_node_fail_counts_timeout_is_recorded() -> None:
    rows, _ = slurm.parse_sacct(
        corpus("sacct-parsable-noheader-snowman-delimiter-37-fields-node-fail-timeout-cancelled-by.txt"),
        fields=SACCT_FIELDS, delimiter="☃",
    )  # fmt: skip
    events = signals.job_events(rows, ["omni11", "node5"], UTC)
    timeouts = [e for e in events if e.object == "Node/omni11"]
    assert timeouts
    assert {e.reason for e in timeouts} == {"SlurmJobTimeout", "SlurmJobFailed"}  # a TIMEOUT job's steps FAILED
    first = next(e for e in timeouts if "job 6708912 " in e.message)
    assert first.message == "Slurm: job 6708912 (NLAGCXZZ0E9) ended TIMEOUT on omni[11-12] (sacct)"
    assert first.time == datetime(2024, 1, 4, 10, 45, 53, tzinfo=UTC)
    node_fail = [r for r in rows if r.state == "NODE_FAIL" and r.get("NodeList") != "None assigned"]
    assert all(any(e.reason == NODE_PROBLEM for e in signals.job_events([r], slurm.hostlist(r.get("NodeList")), UTC))
               for r in node_fail)  # fmt: skip


# ---- end to end: a drain and a node failure during the window, both over by the time criterion 5 asks -------


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimulatedSlurmCluster]:
    base: Path = tmp_path_factory.mktemp("slurm-signals")
    profile = load_profile_file(sim_slurm_profile(base, nodes=3) / "cluster.yaml")
    cluster = SimulatedSlurmCluster.start(profile, "ra-20261202T0000-signals", SimFaults())
    try:
        yield cluster
    finally:
        cluster.close()


def _task_running(started: Path, job: str, within_s: float = 60) -> None:
    """Wait until the job's srun task runs on its node: it creates `started`, then sleeps. Stopping slurmd before
    that fails the launch, the job ends (exit 233) before the node is marked DOWN, and there is nothing to
    requeue. Waiting for squeue to list the step (JOB.0) was not enough: in a full idle session slurmctld listed
    the step, slurmd had not yet started its task, and the job ended with exit 233."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if started.exists():
            return
        time.sleep(0.2)
    raise AssertionError(f"job {job}'s srun task did not start within {within_s:.0f} s")


@NEEDS_SLURM
@pytest.mark.slow
def test_a_node_that_failed_and_came_back_during_the_window_is_a_recurrence(
    sim: SimulatedSlurmCluster, tmp_path: Path
) -> None:
    slurm_ = sim.slurm
    assert slurm_ is not None
    since = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=1)
    slurm_.drain("sim-node-03", "test: drained during probation")
    started = tmp_path / "task-started"
    argv = ["sbatch", "--parsable", "--nodelist=sim-node-01", "--nodes=1", "--time=5", f"--chdir={tmp_path}",
            "--output=/dev/null", "--wrap", f"srun sh -c 'touch {started} && exec sleep 300'"]  # fmt: skip
    job = slurm_.run(argv).stdout.strip()
    slurm_.wait_nodes(lambda n: n.state.base in ("ALLOCATED", "MIXED"), 30, "the job running", ["sim-node-01"])
    _task_running(started, job)  # slurmd stopped before its task runs: the launch fails, the job ends, no requeue
    slurm_.stop_slurmd("sim-node-01")
    slurm_.wait_nodes(lambda n: n.state.down, 90, "sim-node-01 DOWN", ["sim-node-01"])
    slurm_.start_slurmd("sim-node-01")
    slurm_.resume("sim-node-03")
    slurm_.wait_nodes(lambda n: n.state.usable, 60, "both back", ["sim-node-01", "sim-node-03"])
    wanted = [
        (
            "Node/sim-node-03",
            NODE_NOT_READY,
            "Slurm state DRAINED: Reason=test: drained during probation (slurmctld log)",
        ),
        ("Node/sim-node-01", NODE_PROBLEM, f"Slurm: job {job} requeued: node sim-node-01 failed (slurmctld log)"),
        ("Node/sim-node-01", NODE_NOT_READY, "Slurm state DOWN: Reason=not responding (slurmctld log)"),
    ]
    # slurmctld writes the requeue when it acts on the failed node: on a loaded machine, after both are back
    deadline = time.monotonic() + 30
    while True:
        events = sim.node_signals(["sim-node-01", "sim-node-03"], since)
        bad = [(e.object, e.reason, e.message) for e in events if e.type == "Warning"]
        if all(w in bad for w in wanted) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    log = (slurm_.layout.log / "slurmctld.log").read_text(errors="replace")
    said = "\n".join(line for line in log.splitlines() if "sim-node-01" in line or f"JobId={job}" in line)
    for w in wanted:
        assert w in bad, f"{w} not in {bad}; slurmctld said:\n{said[-4000:]}"
    assert all(e.time is not None and e.time >= since for e in events)
    [coverage] = [e.message for e in events if e.reason == "Coverage"]
    assert "no slurmdbd (AccountingStorageType=accounting_storage/none)" in coverage
    assert f"slurmctld's log {slurm_.layout.log}/slurmctld.log (it starts at " in coverage
    now = datetime.now(UTC)
    part = judge_cluster(events, ["sim-node-01", "sim-node-03"], RecurrenceRules(), Window(since, 3600, now))
    assert {f.node for f in part.findings} == {"sim-node-01", "sim-node-03"}
    assert len(part.findings) == 3
    assert "Slurm node history read from: the nodes' Slurm state now" in part.notes[0]
    before = sim.node_signals(["sim-node-02"], since)
    assert [e.reason for e in before] == ["Coverage"]  # the untouched node: nothing recorded
