"""Criterion 5 against a real Prometheus (backfilled with promtool) and through the offline source, on the same series.

One `prometheus` serves every scenario of the module, each in its own window; the criterion
runs end to end from a signed acceptance report (verified, its pass time starting the window)
to the verdict, with a fake cluster (our own seam) for node signals.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from acceptance.baseline import BaselineStore
from acceptance.clusters.base import NODE_NOT_READY, ClusterEvent
from acceptance.clusters.sim_probation import SimulatedPeriod
from acceptance.criteria.context import ProbationOptions, RunContext
from acceptance.criteria.recurrence import Recurrence, baseline_step_time
from acceptance.errors import QueryFailed
from acceptance.judge.verdict import Status, Verdict
from acceptance.metrics import open_source
from acceptance.profile import load_profile_file
from acceptance.sim.model.faultspec import SimFaults
from acceptance.sim.probation import PROGRESS, STEP_TIME
from tests.probation_support import (
    JUDGED_FIELDS,
    ROOT,
    Scenario,
    Served,
    acceptance_report,
    demo_signer,
    keypair,
    serve,
    sim_profile,
    without,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("prometheus") is None, reason="prometheus is not installed (apt-get install prometheus)"
    ),
    pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen (openssh-client) is not installed"),
]

DAY = 24 * 3600.0
NOW = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
BASE = NOW - timedelta(days=20)
SCENARIOS = (
    Scenario("healthy", ("sim-node-07",), BASE, DAY),
    Scenario("xid", ("sim-node-07",), BASE + timedelta(days=2), 12 * 3600, ("xid-recur@sim-node-07:3@6h",)),
    Scenario(
        "slowdown",
        ("sim-node-07",),
        BASE + timedelta(days=4),
        12 * 3600,
        ("slowdown-recur@sim-node-07:5@2h+20m",),
        (*JUDGED_FIELDS, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"),
    ),
    Scenario(
        "pcie",
        ("sim-node-07", "sim-node-04"),
        BASE + timedelta(days=6),
        12 * 3600,
        ("pcie-replay-recur@sim-node-04:2@9h+10m",),
    ),
    Scenario("gap", ("sim-node-07",), BASE + timedelta(days=8), 12 * 3600, ("scrape-gap@sim-node-07@2h+45m",)),
    # open: passed 6 h ago, series up to a little past the time the tests run
    Scenario("open", ("sim-node-07",), datetime.now(UTC) - timedelta(hours=6), 6.5 * 3600),
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serve(tmp_path_factory.mktemp("probation"), SCENARIOS) as found:
        yield found


@pytest.fixture(scope="module")
def signer(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The key that signs the acceptance reports (one the profile's allowed_signers lists) and that list."""
    return demo_signer(tmp_path_factory.mktemp("keys")), ROOT / "baselines" / "sim" / "allowed_signers"


@dataclasses.dataclass
class FakeCluster:
    """Our own seam: the node signals a backend would report."""

    events: list[ClusterEvent] = dataclasses.field(default_factory=list)

    def node_signals(self, nodes: Any, since: datetime) -> list[ClusterEvent]:
        return list(self.events)


@dataclasses.dataclass
class FakeSimCluster(SimulatedPeriod, FakeCluster):
    """A simulated backend's seam for criterion 5: the probation it simulates with the run's faults."""

    profile: Any = None
    faults: SimFaults = dataclasses.field(default_factory=SimFaults)
    run_id: str = "ra-test"


def criterion(
    tmp: Path, report: Path, backend: str = "kube", faults: tuple[str, ...] = (), **profile: Any
) -> Recurrence:
    """Criterion 5 of a run on a cluster whose profile says where the metrics are (on sim: simulated)."""
    loaded = dataclasses.replace(load_profile_file(sim_profile(tmp)), backend=backend, **profile)
    baseline = BaselineStore(ROOT / "baselines" / "sim").latest()
    probation = ProbationOptions(from_report=report)
    ctx = RunContext.create(
        loaded, baseline, returned_nodes=(), run_id="ra-test", started=NOW, ticket="INC-7", probation=probation
    )
    cluster = FakeSimCluster(profile=loaded, faults=SimFaults.parse(faults)) if backend == "sim" else FakeCluster()
    run = SimpleNamespace(context=ctx, cluster=cluster, selected=frozenset({"test_recurrence"}))
    return Recurrence(run)  # type: ignore[arg-type]


def job(served: Served, name: str) -> dict[str, Any]:
    return {"step_time": STEP_TIME, "progress": PROGRESS, "logs": [str(p) for p in served.logs[name]]}


def both(served: Served, signer: tuple[Path, Path], tmp: Path, name: str) -> tuple[Verdict, Verdict]:
    """The verdict from the real Prometheus and from the same series read offline."""
    s = served.scenarios[name]
    report = acceptance_report(tmp / "report", signer[0], passed_at=s.start, nodes=s.nodes)
    live = criterion(tmp, report, prometheus={"url": served.url}, recurrence={"job": job(served, name)})
    offline = criterion(tmp, report, recurrence={"job": job(served, name), "offline_dumps": str(served.dumps[name])})
    try:
        return live.verdict(), offline.verdict()
    finally:
        live.close()
        offline.close()


def first(verdict: Verdict) -> tuple[Any, ...]:
    f = verdict.figures
    return f.get("signal"), f.get("node"), f.get("gpu"), f.get("time")


def at(start: datetime, **offset: float) -> str:
    return (start + timedelta(**offset)).strftime("%Y-%m-%dT%H:%M:%SZ").replace(":00Z", "Z")


def test_healthy_window_passes_and_says_what_is_not_collected(served: Served, signer: Any, tmp_path: Path) -> None:
    live, offline = both(served, signer, tmp_path, "healthy")
    assert live.status is Status.PASS, live.message()
    assert offline.status is Status.PASS, offline.message()
    assert live.summary == offline.summary
    assert live.summary.startswith("no recurrence on sim-node-07 over 1d (")
    assert "0 XID, DBE not collected" in live.summary
    assert live.figures["hw.ecc_dbe"] == "not collected"
    assert live.figures["hw.slowdown"] == "not collected"
    assert live.figures["hw.nvlink_crc_flit"] == "not collected"
    assert any(e.startswith("ECC double-bit errors (volatile): not collected") for e in live.evidence)
    assert isinstance(live.figures["queries"], int)
    assert live.figures["queries"] > 0
    assert live.figures["source"].startswith(f"Prometheus at {served.url}")
    assert live.figures["acceptance_passed"] == served.scenarios["healthy"].start.isoformat()


@pytest.mark.parametrize(
    ("name", "signal", "node", "gpu", "offset_h"),
    [
        ("xid", "xid", "sim-node-07", "3", 6.0),
        ("slowdown", "slowdown", "sim-node-07", "5", 2.0),
        ("pcie", "pcie_replay", "sim-node-04", "2", 9.0),
    ],
)
def test_each_recurrence_fails_with_its_signal_node_gpu_and_time(
    served: Served, signer: Any, tmp_path: Path, name: str, signal: str, node: str, gpu: str, offset_h: float
) -> None:
    live, offline = both(served, signer, tmp_path, name)
    start = served.scenarios[name].start
    assert live.status is Status.FAIL, live.message()
    assert first(live) == (signal, node, gpu, at(start, hours=offset_h))
    assert first(offline) == first(live)
    assert live.figures["uuid"].startswith("GPU-")


def test_xid_brings_the_jobs_watchdog_and_the_vanished_gpu_into_the_evidence(
    served: Served, signer: Any, tmp_path: Path
) -> None:
    live, _ = both(served, signer, tmp_path, "xid")
    lines = "\n".join(live.evidence)
    assert "XID 79 (GPU has fallen off the bus) on sim-node-07 GPU 3" in live.summary
    assert "NCCL watchdog timeout (rank 0)" in lines
    assert "GPU stopped reporting while its node kept reporting" in lines
    assert live.figures["watchdog_timeouts"] == 8


def test_slowdown_also_fails_the_jobs_sustained_rise(served: Served, signer: Any, tmp_path: Path) -> None:
    live, _ = both(served, signer, tmp_path, "slowdown")
    assert any(e.startswith("step time median +12") for e in live.evidence), live.evidence


def test_scrape_gap_longer_than_allowed_is_inconclusive_with_start_and_end(
    served: Served, signer: Any, tmp_path: Path
) -> None:
    live, offline = both(served, signer, tmp_path, "gap")
    start = served.scenarios["gap"].start
    assert live.status is Status.INCONCLUSIVE, live.message()
    assert offline.status is Status.INCONCLUSIVE
    assert (live.figures["gap_subject"], live.figures["gap_start"], live.figures["gap_end"]) == (
        "sim-node-07",
        at(start, hours=2),
        at(start, hours=2, minutes=44),
    )
    assert "gap longer than 15m: no samples from sim-node-07" in live.summary


def test_open_window_is_pending_with_the_right_remaining_time(served: Served, signer: Any, tmp_path: Path) -> None:
    s = served.scenarios["open"]
    report = acceptance_report(tmp_path / "report", signer[0], passed_at=s.start, nodes=s.nodes)
    found = criterion(tmp_path, report, prometheus={"url": served.url}, recurrence={"job": job(served, "open")})
    try:
        before = datetime.now(UTC)
        verdict = found.verdict()
        after = datetime.now(UTC)
    finally:
        found.close()
    assert verdict.status is Status.PENDING, verdict.message()
    remaining = verdict.figures["remaining_s"]
    # the report records when it passed to the second, and the figure is rounded to the second
    end = s.start.replace(microsecond=0) + timedelta(days=1)
    assert (end - after).total_seconds() - 1 <= remaining
    assert remaining <= (end - before).total_seconds() + 1
    assert "of 1d (" in verdict.summary
    assert "so far 0 XID" in verdict.summary


def test_node_signal_from_the_backend_fails(served: Served, signer: Any, tmp_path: Path) -> None:
    s = served.scenarios["healthy"]
    report = acceptance_report(tmp_path / "report", signer[0], passed_at=s.start, nodes=s.nodes)
    found = criterion(tmp_path, report, prometheus={"url": served.url}, recurrence={"job": job(served, "healthy")})
    when = s.start + timedelta(hours=3)
    found.run.cluster.events.append(ClusterEvent(when, "Node/sim-node-07", NODE_NOT_READY, "Ready=False", "Warning"))
    try:
        verdict = found.verdict()
    finally:
        found.close()
    assert verdict.status is Status.FAIL
    assert (verdict.figures["signal"], verdict.figures["node"], verdict.figures["time"]) == (
        "node",
        "sim-node-07",
        at(s.start, hours=3),
    )


def test_a_failing_query_is_inconclusive_with_the_query_and_the_answer(
    served: Served, signer: Any, tmp_path: Path
) -> None:
    s = served.scenarios["healthy"]
    report = acceptance_report(tmp_path / "report", signer[0], passed_at=s.start, nodes=s.nodes)
    bad = {"step_time": "max(job_step_time_seconds{job=", "progress": PROGRESS}
    found = criterion(tmp_path, report, prometheus={"url": served.url}, recurrence={"job": bad})
    try:
        verdict = found.verdict()
    finally:
        found.close()
    assert verdict.status is Status.INCONCLUSIVE
    assert verdict.figures["query"].startswith("max(job_step_time_seconds{job=")
    assert "bad_data" in str(verdict.figures["answer"])
    assert "parse error" in str(verdict.figures["answer"])


def test_prometheus_that_does_not_answer_is_inconclusive_within_the_deadline(signer: Any, tmp_path: Path) -> None:
    report = acceptance_report(tmp_path / "report", signer[0], passed_at=BASE)
    found = criterion(
        tmp_path,
        report,
        prometheus={"url": "http://127.0.0.1:9", "deadline": "3s", "timeout": "1s"},
        recurrence={"job": {"step_time": STEP_TIME}},
    )
    verdict = found.verdict()
    assert verdict.status is Status.INCONCLUSIVE
    assert "no answer within the deadline" in str(verdict.figures["answer"]) or "Error" in str(
        verdict.figures["answer"]
    )


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ("junit", "junit.xml: changed since it was listed"),
        ("unsigned", "MANIFEST.json: not signed"),
        ("failed", "did not pass (1 failed items)"),
        ("other-ticket", "is of ticket 'INC-8', not 'INC-7'"),
    ],
)
def test_a_report_that_cannot_start_a_probation_is_refused(
    served: Served, signer: Any, tmp_path: Path, change: str, why: str
) -> None:
    s = served.scenarios["healthy"]
    report = acceptance_report(
        tmp_path / "report",
        signer[0],
        passed_at=s.start,
        failed=change == "failed",
        ticket="INC-8" if change == "other-ticket" else "INC-7",
    )
    if change == "junit":
        (report / "junit.xml").write_text((report / "junit.xml").read_text().replace('time="2"', 'time="3"'))
    if change == "unsigned":
        (report / "MANIFEST.json.sig").unlink()
    found = criterion(tmp_path, report, prometheus={"url": served.url}, recurrence={"job": job(served, "healthy")})
    verdict = found.verdict()
    assert verdict.status is Status.FAIL
    assert verdict.summary.startswith("acceptance report refused:")
    assert why in verdict.summary
    assert found.source is None, "nothing is queried for a refused report"


def test_report_signed_by_someone_the_profile_does_not_allow_is_refused(
    served: Served, signer: Any, tmp_path: Path
) -> None:
    other, _ = keypair(tmp_path / "other")
    report = acceptance_report(tmp_path / "report", other, passed_at=BASE)
    found = criterion(tmp_path, report, prometheus={"url": served.url}, recurrence={"job": job(served, "healthy")})
    verdict = found.verdict()
    assert verdict.status is Status.FAIL
    assert verdict.summary.startswith("acceptance report refused:")
    assert "allowed_signers" in verdict.summary


def test_job_baseline_is_the_smoke_samples_median_without_warm_up() -> None:
    sample = {"smoke": {"step": [1, 2, 3, 4, 5, 6], "step_time_s": [11.3, 1.8, 1.4, 1.2, 1.19, 1.23]}}
    assert baseline_step_time(sample) == 1.2
    shipped = BaselineStore(ROOT / "baselines" / "sim").latest().baseline.data["results"]
    assert baseline_step_time(dict(shipped)) == pytest.approx(1.2, rel=0.01), "the simulator's job: ~1.2 s a step"
    assert baseline_step_time({}) is None


def test_offline_source_refuses_promql_it_cannot_evaluate(served: Served, tmp_path: Path) -> None:
    loaded = dataclasses.replace(
        load_profile_file(sim_profile(tmp_path)), recurrence={"offline_dumps": str(served.dumps["healthy"])}
    )
    source = open_source(loaded)
    from acceptance.metrics.base import Grid

    s = served.scenarios["healthy"]
    with pytest.raises(QueryFailed, match="plain selector"):
        source.job_series("rate(job_steps_completed_total[5m])", Grid(s.start, s.start + timedelta(hours=1), 15))


def test_without_prometheus_the_simulated_probation_reads_the_same_dumps_offline(
    signer: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A machine without the prometheus package: the simulated period is read through the offline source."""
    monkeypatch.setenv("PATH", without(("prometheus", "promtool"), tmp_path / "bin"))
    passed = NOW - timedelta(hours=30)
    report = acceptance_report(tmp_path / "report", signer[0], passed_at=passed)
    found = criterion(tmp_path, report, backend="sim", faults=("pcie-replay-recur@sim-node-07:6@3h+10m",))
    try:
        verdict = found.verdict()
        folder = found.simulated.folder if found.simulated else None
    finally:
        found.close()
    assert verdict.status is Status.FAIL, verdict.message()
    assert first(verdict) == ("pcie_replay", "sim-node-07", "6", at(passed, hours=3))
    assert "SIMULATED, offline (no prometheus)" in verdict.figures["source"]
    assert any("promtool and prometheus not found" in line for line in verdict.evidence)
    assert verdict.figures["simulated_window"] is True
    assert folder is not None
    assert not folder.exists(), "the simulated period's files are removed when the criterion closes"
