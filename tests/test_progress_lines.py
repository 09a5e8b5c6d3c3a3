"""Progress lines, pure: workloads' progress in, one line per batch out; the display's drawing, recorded."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from acceptance.clusters.base import DcgmWorkload, Handle, NcclWorkload, WorkloadProgress
from acceptance.clusters.kube.progress import pod_phase, workload_progress
from acceptance.progress.display import ERASE_BELOW, ERASE_LINE, LiveDisplay
from acceptance.progress.status import BatchStatus, duration, summarize, where

NODES = tuple(f"sim-node-{i:02d}" for i in range(1, 17))
HOUR = 3600.0


def dcgm(node: str, phase: str, elapsed: float = 245.0, note: str = "", status: Any = None) -> WorkloadProgress:
    return WorkloadProgress(f"dcgm-{node}", "dcgm", (node,), phase, elapsed, HOUR, note, status)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("seconds", "text"), [(0, "0m00s"), (42, "0m42s"), (245, "4m05s"), (3600, "1h00m"), (5430, "1h30m"), (-3, "0m00s")]
)
def test_durations_read_at_a_glance(seconds: float, text: str) -> None:
    assert duration(seconds) == text


def test_where_names_few_nodes_and_counts_many() -> None:
    assert where(()) == "no node yet"
    assert where(("sim-node-02", "sim-node-01", "sim-node-02")) == "sim-node-01, sim-node-02"
    assert where(NODES) == "16 nodes (sim-node-01..sim-node-16)"


def test_a_running_batch_counts_its_workloads_by_phase_against_the_deadline() -> None:
    progress = [dcgm(n, "running" if i < 12 else "pulling image") for i, n in enumerate(NODES)]
    status = summarize("dcgm", progress, note="tests finished: known at its end")
    assert status.line() == (
        "dcgm on 16 nodes (sim-node-01..sim-node-16): 4 pulling image, 12 running | 4m05s of 1h00m"
        " | tests finished: known at its end"
    )
    assert not status.done


def test_one_workload_names_its_phase_alone_and_finished_ones_count_as_done() -> None:
    nccl = WorkloadProgress("nccl-all_reduce_perf", "nccl", NODES, "pending", 3.0, 1800.0)
    assert summarize("nccl-all_reduce_perf", [nccl]).line() == (
        "nccl-all_reduce_perf on 16 nodes (sim-node-01..sim-node-16): pending | 0m03s of 30m00s"
    )
    mixed = [dcgm("sim-node-01", "running", 600), dcgm("sim-node-02", "done", 590, status="succeeded")]
    assert summarize("dcgm", mixed).line() == "dcgm on sim-node-01, sim-node-02: 1 running, 1 done | 10m00s of 1h00m"


def test_the_schedulers_message_wins_over_the_batch_note_while_pending() -> None:
    waiting = dcgm("sim-node-03", "pending", 30, note="unschedulable: 0/16 nodes are available: Insufficient gpu")
    line = summarize("dcgm", [dcgm("sim-node-01", "running"), waiting], note="batch note").line()
    assert line.endswith("| dcgm-sim-node-03: unschedulable: 0/16 nodes are available: Insufficient gpu")
    assert "batch note" not in line


def test_an_ended_batch_says_its_outcomes_its_time_and_the_first_failure() -> None:
    ended = [dcgm(n, "done", 900, status="succeeded") for n in NODES[:15]]
    ended.append(dcgm("sim-node-16", "done", 910, note="dcgmi exited 1", status="failed"))
    status = summarize("dcgm", ended, note="not shown once ended")
    assert status.done
    assert status.line() == (
        "dcgm on 16 nodes (sim-node-01..sim-node-16): 15 succeeded, 1 failed in 15m10s (deadline 1h00m)"
        " | dcgm-sim-node-16: dcgmi exited 1"
    )


def test_a_line_never_wraps_and_a_status_is_plain_data_both_ways() -> None:
    status = summarize("dcgm", [dcgm(n, "running") for n in NODES], note="x" * 200, updated=1764633600.5)
    cut = status.line(80)
    assert len(cut) == 80
    assert cut.endswith("...")
    assert cut.startswith("dcgm on 16 nodes")
    assert BatchStatus.from_json(status.to_json()) == status


def pod(name: str, *, node: str | None = "sim-node-01", phase: str = "Pending", waiting: str | None = None) -> Any:
    status: dict[str, Any] = {"phase": phase}
    if waiting:
        status["containerStatuses"] = [{"name": "main", "state": {"waiting": {"reason": waiting}}}]
    if node is None:
        status["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/16 nodes fit"}
        ]
    return {"metadata": {"name": name}, "spec": {"nodeName": node} if node else {}, "status": status}


def test_pod_phases_as_the_kubelet_reports_them() -> None:
    assert pod_phase(pod("p", node=None)) == "pending"
    assert pod_phase(pod("p", waiting="ContainerCreating")) == "pulling image"
    assert pod_phase(pod("p", waiting="ErrImagePull")) == "pulling image"
    assert pod_phase(pod("p", phase="Running")) == "running"
    assert pod_phase(pod("p", phase="Succeeded")) == "done"


def test_an_mpijob_runs_once_its_launcher_does() -> None:
    now = datetime(2026, 12, 1, tzinfo=UTC)
    handle = Handle(NcclWorkload("nccl-a", NODES[:2], 8, ("all_reduce_perf",), {}, 600.0), (("MPIJob", "a"),), (), now)
    workers = {"w0": pod("w0", phase="Running"), "w1": pod("w1", phase="Running")}
    launcher = pod("launcher", waiting="ContainerCreating")
    pulling = workload_progress(handle, {**workers, "launcher": launcher}, launcher, None, 5.0, 600.0)
    assert (pulling.phase, pulling.nodes, pulling.kind) == ("pulling image", NODES[:2], "nccl")
    launcher = pod("launcher")  # bound, its container not yet created
    assert workload_progress(handle, {**workers, "launcher": launcher}, launcher, None, 6.0, 600.0).phase == "starting"
    launcher = pod("launcher", phase="Running")
    assert workload_progress(handle, {**workers, "launcher": launcher}, launcher, None, 7.0, 600.0).phase == "running"
    ended = workload_progress(handle, workers, launcher, ("failed", "launcher exited 1", 1), 9.0, 600.0)
    assert (ended.phase, ended.status, ended.note) == ("done", "failed", "launcher exited 1")


def test_an_unschedulable_workload_is_pending_with_the_schedulers_message() -> None:
    now = datetime(2026, 12, 1, tzinfo=UTC)
    handle = Handle(DcgmWorkload("dcgm-n1", "n1", 8, ("dcgmi",), 60.0), (("Job", "d"),), (), now)
    shown = workload_progress(handle, {"d-1": pod("d-1", node=None)}, None, None, 2.0, 60.0)
    assert (shown.phase, shown.note, shown.nodes) == ("pending", "unschedulable: 0/16 nodes fit", ("n1",))


class Recorder:
    """A `Terminal` that keeps what it is given (our own seam; pytest's own is in test_progress_terminal)."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.resumed = 0

    def width(self) -> int:
        return 120

    def fresh_line(self) -> None:
        self.out.append("<fresh>")

    def write(self, text: str) -> None:
        self.out.append(text)

    def line(self, text: str) -> None:
        self.out.append(text + "\n")

    def resume(self, at_line_start: bool) -> None:
        self.resumed += 1


def status(key: str, phase: str, elapsed: float) -> BatchStatus:
    return summarize(key, [dcgm("sim-node-07", phase, elapsed, status="succeeded" if phase == "done" else None)])


def test_plain_lines_come_every_n_seconds_while_the_caller_waits_and_the_last_word_at_the_end() -> None:
    now = [0.0]
    term = Recorder()
    display = LiveDisplay(term, live=False, every_s=30, clock=lambda: now[0])
    display.update(status("dcgm", "running", 0))  # not waiting yet: pytest owns the terminal
    assert term.out == []
    with display.foreground():
        for t in (1, 29, 31, 45, 62):
            now[0] = t
            display.update(status("dcgm", "running", t))
        now[0] = 70
        display.update(status("dcgm", "done", 70))
    lines = [s for s in term.out if s.endswith("\n")]
    assert lines == [
        "dcgm on sim-node-07: running | 0m31s of 1h00m\n",
        "dcgm on sim-node-07: running | 1m02s of 1h00m\n",
        "dcgm on sim-node-07: succeeded in 1m10s (deadline 1h00m)\n",
    ]
    assert not any("\x1b" in s for s in term.out)


def test_a_batch_that_ends_before_its_first_line_prints_nothing_in_plain_mode() -> None:
    term = Recorder()
    display = LiveDisplay(term, live=False, every_s=30, clock=lambda: 5.0)
    with display.foreground():
        display.update(status("nccl", "running", 1))
        display.update(status("nccl", "done", 5))
    assert term.out == []


def test_a_tty_line_is_rewritten_in_place_and_a_background_batch_leaves_when_the_wait_ends() -> None:
    term = Recorder()
    display = LiveDisplay(term, live=True, every_s=30)
    with display.foreground():
        display.update(status("dcgm", "running", 1))
        display.update(status("dcgm", "running", 2))
        display.update(status("prepull", "pulling image", 2))
        display.update(status("dcgm", "done", 3))
    draws = [s for s in term.out if s != "<fresh>"]
    assert term.out[0] == "<fresh>"
    assert term.out.count("<fresh>") == 1
    assert draws[0] == f"\r{ERASE_LINE}dcgm on sim-node-07: running | 0m01s of 1h00m"
    assert draws[1] == f"\r\r{ERASE_LINE}dcgm on sim-node-07: running | 0m02s of 1h00m"  # same line, rewritten
    assert draws[2].endswith(f"\n\r{ERASE_LINE}prepull on sim-node-07: pulling image | 0m02s of 1h00m")
    assert draws[3].startswith("\r\x1b[1A")
    assert "succeeded in 0m03s" in draws[3]
    # the wait ended: dcgm keeps its last word, the still-pulling prepull line is erased until the next wait
    assert draws[-1] == f"\r\x1b[1A\r{ERASE_LINE}dcgm on sim-node-07: succeeded in 0m03s (deadline 1h00m){ERASE_BELOW}"
    assert term.resumed == 1


def test_a_deadline_measured_from_a_clock_reads_as_it_was_set() -> None:
    """The waiter's deadline is `deadline - created_at` of a monotonic clock: 3599.9999 s is still 1h00m."""
    almost = WorkloadProgress("dcgm-n1", "dcgm", ("n1",), "running", 59.9, 3599.9999)
    assert summarize("dcgm", [almost]).line() == "dcgm on n1: running | 0m59s of 1h00m"
