"""A failing Kubernetes API is an ERROR of the items it touches, never a FAIL; cleanup and the run have deadlines.

In-process and fast: the emulator with injected faults, the scheduler with a counting cluster, the
training criteria with a stand-in run. tests/test_fault_matrix.py runs the whole suite against them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from acceptance.clusters.base import DcgmWorkload, Handle, ProgressSink, WorkloadResult
from acceptance.clusters.kube.cluster import KubeCluster
from acceptance.clusters.kube.settings import ApiRetry, KubeSettings
from acceptance.criteria.loss import LossContinuity
from acceptance.criteria.scheduler import Batch, Scheduler
from acceptance.criteria.shared_folder import SharedFolder
from acceptance.criteria.smoke import SmokeStep
from acceptance.criteria.training import TrainingLogs
from acceptance.errors import ClusterError, JobFailed, WorkloadNotRun
from acceptance.judge.verdict import Status, Verdict
from acceptance.profile import load_profile_file
from acceptance.sim.kubeapi import EmulatedApi
from acceptance.sim.kubeapi.faults import Faults
from tests.kube_tool_double import CannedRunner
from tests.suite_run import sim_cluster_folder
from tests.test_kube_e2e import NCCL, NODES, SETTINGS, cluster, dcgm_workloads, labelled

FAST = ApiRetry(attempts=2, backoff_s=0.01, max_backoff_s=0.05)


#: the emulator answers 503 to every request for a pod's log
NO_LOGS = Faults(refused=frozenset({"GET pods/log"}))


# ------------------------------------------------------------------ a log the API will not hand over


@pytest.mark.heavy  # waits out the log read's retries
def test_a_log_the_api_will_not_hand_over_is_an_error_not_an_empty_success() -> None:
    """It was a success with no output: the smoke job's parser then read an empty log (no verdict at all)."""
    with cluster(faults=NO_LOGS) as (_, kube):
        [result] = kube.run(dcgm_workloads(NODES[:1], 8, 3, 600), deadline_s=60)
    assert result.status == "error"
    assert "its log could not be read: read log of pod dcgm-gpu-0001-t1-" in result.reason
    assert "HTTP 503" in result.reason


@pytest.mark.heavy  # waits out the log read's retries
def test_a_failed_job_whose_log_the_api_will_not_hand_over_stays_a_failure() -> None:
    with cluster(faults=NO_LOGS, runner=CannedRunner(failing_nodes=frozenset({"gpu-0001"}))) as (_, kube):
        [result] = kube.run(dcgm_workloads(NODES[:1], 8, 3, 600), deadline_s=60)
    assert result.status == "failed"
    assert result.reason.startswith("BackoffLimitExceeded: ")
    assert "its log could not be read: read log of pod dcgm-gpu-0001-t1-" in result.reason


# ------------------------------------------------------------------ cleanup retries until its deadline


def _objects_then_faults(api: EmulatedApi, settings: KubeSettings, faults: Faults, nccl: bool = True) -> KubeCluster:
    """A run whose workloads still run (every object exists), then an API that fails as `faults` say."""
    kube = KubeCluster(settings, "t1", api.api_client())
    kube.submit([*dcgm_workloads(NODES[:2], 8, 3, 600), *([replace(NCCL, nodes=NODES[2:4])] if nccl else [])])
    assert labelled(api)
    api.faults = faults
    return kube


def _tidy(api: EmulatedApi, settings: KubeSettings) -> None:
    """The run's objects removed once the API answers again, with a cleanup's usual deadline: with the test's 1 s
    one, a machine running two test sessions at once left the lease ConfigMap (foreground deletion still going)."""
    KubeCluster(replace(settings, cleanup_timeout_s=60.0), "t1", api.api_client()).cleanup()
    assert labelled(api) == []


@pytest.mark.heavy
def test_cleanup_retries_an_api_failing_four_requests_in_five_until_nothing_is_left() -> None:
    """Before: one listing that failed past its retries ended the cleanup, and the objects stayed."""
    settings = replace(SETTINGS, api_retry=FAST, cleanup_timeout_s=60.0)
    with EmulatedApi(CannedRunner(), time_scale=1.0) as api:
        kube = _objects_then_faults(api, settings, Faults(error_rate=0.8, seed=15), nccl=False)
        kube.cleanup()
        api.faults = Faults()
        assert labelled(api) == []


@pytest.mark.heavy
def test_cleanup_ends_at_its_deadline_and_names_what_it_could_not_delete() -> None:
    settings = replace(SETTINGS, api_retry=FAST, cleanup_timeout_s=1.0)
    with EmulatedApi(CannedRunner(), time_scale=1.0) as api:
        kube = _objects_then_faults(api, settings, Faults(refused=frozenset({"DELETE jobs"})))
        with pytest.raises(ClusterError) as caught:
            kube.cleanup()
        said = str(caught.value)
        assert "objects of run t1 may remain after 1 s of cleanup: " in said
        assert "object(s) remain: Job/dcgm-gpu-0001-t1 (run t1, created 20" in said
        assert "Job/dcgm-gpu-0002-t1" in said
        assert "last API error: delete Job dcgm-gpu-000" in said
        assert "HTTP 503" in said
        api.faults = Faults()
        _tidy(api, settings)  # what `acceptance cleanup` would do later


@pytest.mark.heavy
def test_a_cleanup_request_the_api_never_answers_is_sent_again_within_the_deadline() -> None:
    """With the profile's 60 s read timeout, one request the API read and never answered (the fault matrix's
    3 % black-hole case, 1 run in 6) waited out the whole cleanup deadline and left the run's lease ConfigMap."""
    settings = replace(SETTINGS, cleanup_timeout_s=8.0)  # ApiRetry's read timeout: 60 s, as shipped
    assert settings.api_retry.read_timeout_s > settings.cleanup_timeout_s
    with EmulatedApi(CannedRunner(), time_scale=1.0) as api:
        kube = _objects_then_faults(api, settings, Faults(blackhole_rate=1.0), nccl=False)

        def answer_once_one_is_held() -> None:
            deadline = time.monotonic() + 5
            while not api.blackholed and time.monotonic() < deadline:
                time.sleep(0.01)
            api.faults = Faults()  # the held request stays unanswered; the next ones are answered

        answered = threading.Thread(target=answer_once_one_is_held, daemon=True)
        answered.start()
        started = time.monotonic()
        kube.cleanup()
        answered.join(5)
        assert api.blackholed == 1
        assert labelled(api) == []
        # a bound, not a speed: the held request was given up after a quarter of the 8 s deadline
        assert time.monotonic() - started < 8


def test_the_cleanup_deadline_is_the_profiles_kube_cleanup_timeout() -> None:
    from acceptance.errors import ProfileError

    base = {"namespace": "ns", "images": {"nccl": "n", "dcgm": "d"}}
    assert KubeSettings.from_mapping(base).cleanup_timeout_s == 60.0
    assert KubeSettings.from_mapping({**base, "cleanup_timeout": "2m"}).cleanup_timeout_s == 120.0
    with pytest.raises(ProfileError, match=r"kube\.cleanup_timeout: "):
        KubeSettings.from_mapping({**base, "cleanup_timeout": "soon"})


@pytest.mark.heavy
def test_cleanup_of_an_api_that_never_answers_ends_at_its_deadline_saying_it_could_not_list() -> None:
    settings = replace(SETTINGS, api_retry=FAST, cleanup_timeout_s=1.0)
    with EmulatedApi(CannedRunner(), time_scale=1.0) as api:
        kube = _objects_then_faults(api, settings, Faults(error_rate=1.0))
        started = time.monotonic()
        with pytest.raises(ClusterError, match=r"could not list its MPIJob, Job, Pod, ConfigMap objects \(last API"):
            kube.cleanup()
        # a bound on hanging, not a measure of speed: the deadline is 1 s, each request bounded by what is left
        assert time.monotonic() - started < 15
        api.faults = Faults()
        _tidy(api, settings)


# ------------------------------------------------------------------ the smoke job's API failure is an ERROR


def _training_run(result: WorkloadResult, tmp_path: Path) -> Any:
    """A stand-in `Criteria` whose one smoke batch gives `result` (the scheduler's, for a job it awaited)."""
    profile = load_profile_file(sim_cluster_folder(tmp_path) / "cluster.yaml")
    assert profile.smoke is not None
    logs = SimpleNamespace(smoke=None, pre_incident=None, restore_step=None)
    scheduler = SimpleNamespace(results=lambda batch: {key: result for key in batch.workloads})
    run = SimpleNamespace(context=SimpleNamespace(profile=profile, logs=logs, baseline=None),
                          diagnostics=SimpleNamespace(finish_first=lambda: None), scheduler=scheduler)  # fmt: skip
    run.training = TrainingLogs(run)  # type: ignore[arg-type]
    return run


def _result(status: str, reason: str) -> WorkloadResult:
    now = datetime.now(UTC)
    return WorkloadResult("train-smoke", "smoke", "", None, status, reason, now, now, {}, (), (), "")  # type: ignore[arg-type]


CREATE_429 = "create MPIJob train-smoke-r1: HTTP 429: injected fault: TooManyRequests (emulator)"


def test_a_smoke_job_the_api_would_not_create_is_an_error_of_smoke_and_loss_not_a_failure(tmp_path: Path) -> None:
    """Before: FAIL ("the smoke run of the job error (create MPIJob ...: HTTP 429 ...)") on a healthy cluster."""
    run = _training_run(_result("error", CREATE_429), tmp_path)
    with pytest.raises(WorkloadNotRun, match="HTTP 429"):
        run.training.smoke()
    smoke = SmokeStep(run).verdict()
    loss = LossContinuity(run).verdict()
    for verdict in (smoke, loss):
        assert verdict.status is Status.ERROR, verdict.summary
        assert "cannot judge" in verdict.summary
        assert CREATE_429 in verdict.summary


def test_a_smoke_job_that_ran_and_failed_is_still_a_failure(tmp_path: Path) -> None:
    run = _training_run(_result("failed", "MPIJob MPIJobFailed: launcher exited 1"), tmp_path)
    with pytest.raises(JobFailed):
        run.training.smoke()
    assert SmokeStep(run).verdict().status is Status.FAIL


# ------------------------------------------------------------------ the run's deadline


class _Cluster:
    """Just enough of a `Cluster` for the scheduler: every workload runs until its deadline (a hang)."""

    def __init__(self) -> None:
        self.submitted: list[str] = []
        self.waited: list[float] = []

    def submit(self, workloads: Sequence[Any]) -> list[Handle]:
        self.submitted += [w.name for w in workloads]
        return [Handle(w, (("Job", w.name),), (), datetime.now(UTC)) for w in workloads]

    def wait(self, handles: Sequence[Handle], deadline_s: float, *, progress: ProgressSink | None = None) -> list[Any]:
        self.waited.append(deadline_s)
        time.sleep(deadline_s)
        now = datetime.now(UTC)
        why = f"no final state within {deadline_s:.0f} s"
        return [
            WorkloadResult(h.workload.name, "dcgm", "", None, "timeout", why, now, now, {}, (), (), "") for h in handles
        ]


def _dcgm_batch() -> Batch:
    return Batch("dcgm", "dcgm", {"n1": DcgmWorkload("dcgm-n1", "n1", 8, ("dcgmi",), 3600.0)}, 3600.0)


def test_no_batch_starts_after_the_runs_deadline(tmp_path: Path) -> None:
    cluster = _Cluster()
    past = datetime.now(UTC) - timedelta(seconds=1)
    scheduler = Scheduler(cluster, SharedFolder(tmp_path), None, 60.0, deadline=past)  # type: ignore[arg-type]
    result = scheduler.results(_dcgm_batch())["n1"]
    assert cluster.submitted == []
    assert result.status == "error"
    assert "the run's deadline" in result.reason
    assert "before this batch started: it was not started" in result.reason


@pytest.mark.heavy
def test_a_batch_is_awaited_until_the_runs_deadline_only_and_is_then_an_error(tmp_path: Path) -> None:
    cluster = _Cluster()
    soon = datetime.now(UTC) + timedelta(seconds=1.5)
    scheduler = Scheduler(cluster, SharedFolder(tmp_path), None, 60.0, deadline=soon)  # type: ignore[arg-type]
    result = scheduler.results(_dcgm_batch())["n1"]
    assert cluster.submitted == ["dcgm-n1"]
    assert len(cluster.waited) == 1
    assert cluster.waited[0] <= 1.5  # not the batch's own hour
    assert result.status == "error"
    assert result.reason.startswith("the run's deadline (the profile's run.deadline) passed while this workload ran")


def test_the_runs_deadline_comes_from_the_profile_or_adds_up_its_workload_deadlines(tmp_path: Path) -> None:
    from acceptance.criteria.context import RunContext

    folder = sim_cluster_folder(tmp_path)
    path = folder / "cluster.yaml"
    started = datetime(2026, 12, 2, tzinfo=UTC)
    default = RunContext.create(load_profile_file(path), None, returned_nodes=(), run_id="r1", started=started)
    assert default.deadline == started + timedelta(seconds=default.gpu_budget_s)
    path.write_text(path.read_text() + "run:\n  deadline: 2h\n")
    assert RunContext.create(
        load_profile_file(path), None, returned_nodes=(), run_id="r1", started=started
    ).deadline == started + (timedelta(hours=2))
    path.write_text(path.read_text().replace("deadline: 2h", "deadline: soon"))
    with pytest.raises(Exception, match=r'cluster.yaml:\d+: run.deadline: found "soon", expected one of'):
        load_profile_file(path)


# ------------------------------------------------------------------ every item carries a verdict


def test_an_item_that_ends_on_a_foreseeable_error_carries_an_error_verdict_naming_it() -> None:
    from acceptance.report.junit import record_error, record_verdict

    item: Any = SimpleNamespace(name="test_smoke_step_time", stash=pytest.Stash(), user_properties=[])
    record_error(item, ClusterError("list pods: HTTP 503: injected fault"))
    props = dict(item.user_properties)
    assert props["verdict"] == "error"
    assert props["summary"] == "test_smoke_step_time: cannot judge: list pods: HTTP 503: injected fault"
    judged: Any = SimpleNamespace(name="test_x", stash=pytest.Stash(), user_properties=[])
    record_verdict(judged, Verdict(Status.FAIL, "x", "x: failed"))
    record_error(judged, ClusterError("later"))  # the item's own verdict stands
    assert [v for k, v in judged.user_properties if k == "verdict"] == ["fail"]


def test_what_the_cleanup_could_not_delete_goes_into_the_reports_provenance() -> None:
    from acceptance.report.reporting_plugin import ReportingPlugin

    reporting: Any = ReportingPlugin.__new__(ReportingPlugin)
    reporting.provenance = {"run_id": "r1"}
    reporting.config = SimpleNamespace(stash=pytest.Stash())
    reporting.note_problems([])
    assert "cleanup" not in reporting.provenance
    reporting.note_problems(["cleanup of run r1 incomplete: 1 object(s) remain: Job/x"])
    assert reporting.provenance["cleanup"] == "cleanup of run r1 incomplete: 1 object(s) remain: Job/x"


@pytest.mark.slow
def test_after_the_runs_deadline_the_items_left_are_errors_naming_it(pytester: pytest.Pytester) -> None:
    """A deadline shorter than the run (half a second: the simulated cluster takes longer to start)."""
    from tests.suite_run import SHIPPED_TIME_SCALE, run_suite

    folder = sim_cluster_folder(pytester.path, time_scale=SHIPPED_TIME_SCALE)  # DCGM must outlast the deadline
    profile = folder / "cluster.yaml"
    profile.write_text(profile.read_text() + "run:\n  deadline: 0.5s\n")
    run = run_suite(pytester, "-k", "preflight or dcgm", "--returned-node=sim-node-07")
    out = run.result.stdout.str()
    assert run.result.ret == 1, out[-3000:]
    verdicts = {name: run.properties(name).get("verdict") for name in run.outcomes}
    assert "fail" not in verdicts.values(), verdicts
    dcgm = run.properties("test_dcgm_diagnostics[sim-node-07]")
    assert dcgm["verdict"] == "error", dcgm
    assert "the run's deadline" in dcgm["summary"]
    assert "NOT ACCEPTED" in out


PROBE = """
from pathlib import Path

import acceptance.clusters.kube.cluster as kube

LOG = Path(__file__).with_name("order.log")
_cleanup = kube.KubeCluster.cleanup


def _note(what):
    with LOG.open("a") as handle:
        handle.write(what + "\\n")


def cleanup(self):
    _note("cleanup")
    return _cleanup(self)


kube.KubeCluster.cleanup = cleanup


def pytest_terminal_summary(terminalreporter):
    _note("summary")
"""


@pytest.mark.slow
def test_the_run_is_cleaned_up_once_before_its_summary_and_nothing_waits_on_the_cluster_after_it(
    pytester: pytest.Pytester,
) -> None:
    """Before: the cleanup ran after the summary, where a black-holed request kept the process a minute."""
    from tests.suite_run import run_suite

    (pytester.path / "orderprobe.py").write_text(PROBE)
    run = run_suite(pytester, "-k", "test_cluster_answers", "-p", "orderprobe")
    assert run.result.ret == 0, run.result.stdout.str()[-3000:]
    assert (pytester.path / "order.log").read_text().split() == ["cleanup", "summary"]


@pytest.mark.parametrize("retry_after", [0, 3])
def test_a_429s_retry_after_is_waited_out_capped_by_the_profiles_longest_backoff(retry_after: int) -> None:
    """Every answer fails (500, 503 or 429): the waits between attempts are the backoff, a 429's Retry-After
    when it asks for more, never more than the profile's max_backoff (the waits are recorded, not timed).

    Before: urllib3's default retries answered each 429 themselves, sleeping its Retry-After unseen by the
    profile's api_retry and the run's deadline; this client never saw a 429 (30 requests took 13 s)."""
    from acceptance.clusters.kube.client import KubeApi

    waits: list[float] = []
    retry = ApiRetry(attempts=12, backoff_s=0.01, max_backoff_s=2.0)
    with EmulatedApi(
        CannedRunner(), time_scale=0.0, faults=Faults(error_rate=1.0, retry_after_s=retry_after, seed=2)
    ) as api:
        kube = KubeApi(api.api_client(), retry, sleep=waits.append)
        with pytest.raises(ClusterError, match=r"list pods: HTTP (500|503|429)"):
            kube.call("list pods", kube.core.list_namespaced_pod, "recovery-acceptance")
    assert len(waits) == 11
    backoffs = [min(0.01 * 2**i, 2.0) for i in range(11)]
    asked = [w for w, b in zip(waits, backoffs, strict=True) if w != b]
    if retry_after == 0:
        assert asked == []  # Retry-After: 0 asks for nothing beyond the backoff
    else:
        assert asked, waits
        assert set(asked) == {2.0}, waits  # 3 s asked for, capped at the longest backoff
