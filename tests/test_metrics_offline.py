"""Criterion 5 over offline dumps, in process: the dumps' time rules, the questions, and a verdict.

tests/test_recurrence_prometheus.py holds the offline source to a real Prometheus's answers (end to end);
these are the fast checks of the same source, on dumps written here and on a simulated production period.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from acceptance.errors import QueryFailed, UsageError
from acceptance.judge.recurrence import judge_hardware, judge_job, judge_probation
from acceptance.judge.recurrence_rules import Window, rules_from_profile
from acceptance.judge.verdict import Status, Verdict
from acceptance.metrics.base import INCREASES, NONZERO, XID_CHANGES, Grid
from acceptance.metrics.collect import JobSources, collect_hardware, collect_job
from acceptance.metrics.offline import OfflineSource
from acceptance.profile import load_profile_file
from acceptance.sim.model.faultspec import SimFaults
from acceptance.sim.model.production import Production
from acceptance.sim.probation import PROGRESS, STEP_TIME, sim_cluster, write_period

ROOT = Path(__file__).resolve().parents[1]
START = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)
XID = 'DCGM_FI_DEV_XID_ERRORS{Hostname="n1",gpu="0",UUID="GPU-a"}'
REPLAYS = 'DCGM_FI_DEV_PCIE_REPLAY_COUNTER{Hostname="n1",gpu="0",UUID="GPU-a"}'


def _dumps(tmp_path: Path) -> OfflineSource:
    """Three scrapes a minute apart without timestamps (dated by their file names), XID 79 from the second."""
    folder = tmp_path / "dumps"
    folder.mkdir()
    for minute, (xid, replays) in enumerate([(0, 10), (79, 10), (79, 14)]):
        name = f"dcgm-{(START + timedelta(minutes=minute)).strftime('%Y%m%dT%H%M%SZ')}.prom"
        (folder / name).write_text(f"{XID} {xid}\n{REPLAYS} {replays}\n")
    (folder / "notes.md").write_text("not a dump\n")
    return OfflineSource(folder)


def _minutes(frame: object) -> list[int]:
    return [int((t - START).total_seconds() // 60) for t in frame["time"]]  # type: ignore[index]


def test_undated_samples_take_their_file_names_time_and_a_value_lasts_five_minutes(tmp_path: Path) -> None:
    source = _dumps(tmp_path)
    assert len(source.files) == 3
    assert source.describe().endswith("(3 files; 3 files without timestamps dated by name or modification time)")
    grid = Grid(START, START + timedelta(minutes=10), 60.0)
    # the last sample (03:02) is the instant value up to 5 minutes later, then the series is absent
    assert _minutes(source.points(NONZERO, "DCGM_FI_DEV_XID_ERRORS", ["n1"], grid)) == [1, 2, 3, 4, 5, 6, 7]
    # a GPU reported in the minute to t if it has a sample in [t - 1 min, t], both ends included
    assert _minutes(source.presence("DCGM_FI_DEV_XID_ERRORS", ["n1"], grid)) == [1, 2, 3]
    assert source.points(NONZERO, "DCGM_FI_DEV_XID_ERRORS", ["n2"], grid).empty


def test_an_xid_counts_when_it_changes_and_a_counter_when_it_increases(tmp_path: Path) -> None:
    source = _dumps(tmp_path)
    grid = Grid(START, START + timedelta(minutes=10), 60.0)
    xids = source.points(XID_CHANGES, "DCGM_FI_DEV_XID_ERRORS", ["n1"], grid)
    assert _minutes(xids) == [1]
    assert xids["value"].tolist() == [79.0]
    assert (xids["node"].tolist(), xids["gpu"].tolist(), xids["uuid"].tolist()) == (["n1"], ["0"], ["GPU-a"])
    replays = source.points(INCREASES, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", ["n1"], grid)
    assert (_minutes(replays), replays["value"].tolist()) == ([2], [4.0])
    census = source.census(["DCGM_FI_DEV_XID_ERRORS"], ["n1"], START, START + timedelta(minutes=10))
    assert census[["metric", "node", "gpu", "blank"]].values.tolist() == [["DCGM_FI_DEV_XID_ERRORS", "n1", "0", False]]


def test_the_jobs_series_is_a_plain_selector_and_promql_is_refused(tmp_path: Path) -> None:
    source = _dumps(tmp_path)
    grid = Grid(START, START + timedelta(minutes=3), 60.0)
    assert source.job_series('max(DCGM_FI_DEV_PCIE_REPLAY_COUNTER{gpu="0"})', grid).tolist() == [10.0, 14.0, 14.0]
    assert source.job_series('DCGM_FI_DEV_PCIE_REPLAY_COUNTER{gpu="1"}', grid).empty
    with pytest.raises(QueryFailed, match="not a PromQL expression"):
        source.job_series("rate(DCGM_FI_DEV_PCIE_REPLAY_COUNTER[5m])", grid)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "README.md").write_text("dumps go here\n")
    with pytest.raises(UsageError, match=r"has no dump \(\.prom, \.txt"):
        OfflineSource(notes)
    with pytest.raises(UsageError, match="does not exist"):
        OfflineSource(tmp_path / "absent")


def _criterion_5(tmp_path: Path, faults: tuple[str, ...]) -> Verdict:
    """Criterion 5 at the end of a 2-hour simulated production period of one node, read from its dumps."""
    profile = load_profile_file(ROOT / "baselines" / "sim" / "cluster.yaml")
    cluster = sim_cluster(profile)
    nodes = ("sim-node-07",)
    fields = ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_XID_ERRORS")
    length_s = 2 * 3600.0
    parsed = SimFaults.parse(faults).check([n.name for n in cluster.nodes]).probation
    model = Production(cluster, nodes, START, length_s, parsed, fields=fields, job_nodes=len(cluster.nodes))
    write_period(model, tmp_path / "period")
    source = OfflineSource(tmp_path / "period" / "dumps")
    rules = rules_from_profile(profile.recurrence, profile.severity.get("degraded_rule"))
    window = Window(START, length_s, START + timedelta(seconds=length_s))
    hardware = collect_hardware(source, nodes, window, rules, profile.gpus_per_node, 15.0)
    job = collect_job(source, JobSources(STEP_TIME, PROGRESS, ()), window, None, [], 15.0)
    parts = [judge_hardware(hardware, rules, window), judge_job(job, rules, window)]
    return judge_probation(parts, nodes, rules, window)


def test_a_quiet_period_passes_and_a_recurring_xid_fails_naming_its_gpu(tmp_path: Path) -> None:
    quiet = _criterion_5(tmp_path / "quiet", ())
    assert quiet.status is Status.PASS, quiet.summary
    xid = _criterion_5(tmp_path / "xid", ("xid-recur@sim-node-07:3@40m",))
    assert xid.status is Status.FAIL, xid.summary
    assert xid.figures["signal"] == "xid"
    assert "sim-node-07" in xid.summary
