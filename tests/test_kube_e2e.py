"""The Kubernetes backend end to end: the official client against the API emulator over HTTP."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from acceptance.clusters.base import DcgmWorkload, NcclWorkload, WorkloadResult
from acceptance.clusters.kube.cluster import KubeCluster
from acceptance.clusters.kube.settings import ApiRetry, KubeSettings
from acceptance.errors import KubeApiError
from acceptance.sim.kubeapi import EmulatedApi
from acceptance.sim.kubeapi.faults import Faults
from tests.kube_tool_double import CannedRunner, node_names

NODES = tuple(node_names(16))
SETTINGS = KubeSettings(
    namespace="recovery-acceptance",
    images={"nccl": "nccl-tests:2.26", "dcgm": "dcgm:4.2.3", "smoke": "nemo:25.04"},
    rdma_resources={"rdma/ib": 8},
    env={"NCCL_IB_HCA": "=mlx5_0,mlx5_1"},
    scheduling_timeout_s=1.0,
    api_retry=ApiRetry(attempts=10, backoff_s=0.01, max_backoff_s=0.05),
)
NCCL = NcclWorkload("all-reduce", NODES, 8, ("all_reduce_perf", "-b", "1M", "-e", "16G", "-f", "2", "-g", "1"), {}, 600)


def dcgm_workloads(nodes: tuple[str, ...], gpus: int, level: int, deadline_s: float) -> list[DcgmWorkload]:
    """One ``dcgmi diag -r LEVEL -j`` workload per node (named ``dcgm-<node>``)."""
    argv = ("dcgmi", "diag", "-r", str(level), "-j")
    return [DcgmWorkload(f"dcgm-{node}", node, gpus, argv, deadline_s) for node in nodes]


def labelled(api: EmulatedApi, leases: bool = True) -> list[str]:
    """Every object of the emulated cluster that carries the harness's label (without the runs' leases)."""
    out = []
    for resource in ("mpijobs", "jobs", "pods", "configmaps"):
        items, _ = api.store.list(
            resource, None, lambda lb: lb.get("app.kubernetes.io/managed-by") == "recovery-acceptance"
        )
        out += [f"{resource}/{o['metadata']['name']}" for o in items]
    return [o for o in out if leases or not o.startswith("configmaps/ra-lease-")]


def crashed_cluster(api: EmulatedApi) -> KubeCluster:
    """A run that dies without cleaning up: its lease (short) is no longer renewed."""
    return KubeCluster(replace(SETTINGS, lease_s=0.3), "crashed", api.api_client())


def crash(run: KubeCluster) -> None:
    run.lease.release()
    time.sleep(0.5)


@contextmanager
def cluster(
    faults: Faults | None = None, time_scale: float = 0.0, runner: CannedRunner | None = None,
    settings: KubeSettings = SETTINGS, run_id: str = "t1",
) -> Iterator[tuple[EmulatedApi, KubeCluster]]:  # fmt: skip
    with EmulatedApi(runner or CannedRunner(), time_scale, faults) as api:
        with KubeCluster(settings, run_id, api.api_client()) as kube:
            yield api, kube
        assert labelled(api) == []


def test_dcgm_on_16_nodes_at_once_with_one_failing_node() -> None:
    runner = CannedRunner(failing_nodes=frozenset({"gpu-0005"}))
    with cluster(runner=runner) as (api, kube):
        results = kube.run(dcgm_workloads(NODES, 8, 3, 1800), deadline_s=30)
        assert labelled(api, leases=False) == [], "finished workloads are deleted at once"
    assert {call[1] for call in runner.calls} == set(NODES)
    by_node = {r.workload: r for r in results}
    bad = by_node.pop("dcgm-gpu-0005")
    assert (bad.status, bad.exit_code) == ("failed", 1)
    assert bad.reason.startswith("BackoffLimitExceeded: Job has reached the specified backoff limit")
    assert '"status": "Fail"' in bad.output
    for node, result in zip(NODES[:4], results[:4], strict=False):
        assert result.ok, result
        assert list(result.placement.values()) == [node]
    assert all(r.ok for r in by_node.values())
    assert {e["reason"] for e in results[0].events} >= {"Scheduled", "Started", "Completed"}
    assert results[0].manifests[0]["kind"] == "Job"
    assert results[0].started
    assert results[0].finished


def test_mpijob_over_16_nodes_maps_every_rank_to_its_node() -> None:
    runner = CannedRunner()
    with cluster(runner=runner) as (_, kube):
        [result] = kube.run([NCCL], deadline_s=30)
    assert result.ok, result.reason
    argv, _, hosts = runner.calls[0]
    assert argv[:6] == ("mpirun", "--allow-run-as-root", "-np", "128", "--hostfile", "/etc/mpi/hostfile")
    assert sorted(h.node for h in hosts) == list(NODES)
    assert all(h.slots == 8 for h in hosts)
    ranks = {}
    for line in result.output.splitlines():
        if line.startswith("#  Rank"):
            fields = line.split()
            ranks[int(fields[2])] = fields[fields.index("on") + 1]
    placement = result.rank_placement(ranks)
    assert len(placement) == 128
    assert {p.node for p in placement.values()} == set(NODES)
    assert placement[9].node == placement[15].node != placement[0].node
    assert any(e["reason"] == "MPIJobSucceeded" for e in result.events)


@pytest.mark.heavy  # waits out the 2 s grace for a failed pod's own reason
def test_failing_launcher_fails_the_mpijob_with_its_log() -> None:
    with cluster() as (_, kube):
        [result] = kube.run([replace(NCCL, argv=(*NCCL.argv, "--fail"))], deadline_s=30)
    assert (result.status, result.exit_code) == ("failed", 1)
    assert result.reason.startswith("MPIJob BackoffLimitExceeded/: Job has reached the specified backoff limit; "
                                    "container launcher of pod all-reduce-t1-launcher-")  # fmt: skip
    assert "unhandled system error" in result.log_tail


@pytest.mark.heavy  # waits out the 1 s wait for the Created condition
def test_mpijob_the_operator_rejects_is_an_error_that_points_at_the_events() -> None:
    with cluster() as (_, kube):
        [result] = kube.run([replace(NCCL, name="empty", nodes=())], deadline_s=30)
    assert result.status == "error"
    assert result.reason.startswith("MPIJob empty-t1 has no Created condition after 1 s")
    assert [e["reason"] for e in result.events] == ["ValidationError"]


@pytest.mark.heavy  # waits out the 1 s scheduling deadline
def test_unschedulable_request_fails_with_the_schedulers_message_within_its_deadline() -> None:
    with cluster() as (_, kube):
        start = time.monotonic()
        [too_big, missing] = kube.run(
            [DcgmWorkload("dcgm-big", "gpu-0003", 9, ("dcgmi", "diag", "-r", "1", "-j"), 600),
             DcgmWorkload("dcgm-ghost", "gpu-9999", 8, ("dcgmi", "diag", "-r", "1", "-j"), 600)],
            deadline_s=30,
        )  # fmt: skip
        elapsed = time.monotonic() - start
    assert too_big.status == "unschedulable"
    assert too_big.reason.startswith(
        "0/16 nodes are available: 1 Insufficient nvidia.com/gpu, 15 node(s) didn't match Pod's node affinity/selector."
    )
    assert missing.reason.startswith("0/16 nodes are available: 16 node(s) didn't match Pod's node affinity/selector.")
    assert any(e["reason"] == "FailedScheduling" for e in too_big.events)
    assert elapsed < SETTINGS.scheduling_timeout_s + 5


def test_image_that_cannot_be_pulled_is_a_clear_failure() -> None:
    settings = replace(SETTINGS, images={**SETTINGS.images, "dcgm": "registry.example/does-not-exist:1"})
    with cluster(settings=settings) as (_, kube):
        [result] = kube.run(dcgm_workloads(NODES[:1], 8, 1, 600), deadline_s=30)
    assert result.status == "failed"
    assert result.reason.startswith("ImagePullBackOff: pod dcgm-gpu-0001-t1-")
    assert "Back-off pulling image" in result.reason
    assert result.exit_code is None


@pytest.mark.parametrize("second", [replace(dcgm_workloads(NODES[:1], 8, 1, 600)[0], name="dcgm-again"),
                                    replace(NCCL, nodes=NODES[:2])], ids=["job", "mpijob"])  # fmt: skip
def test_a_lagging_pod_watch_still_records_the_image_digest_and_exit_code(second: DcgmWorkload | NcclWorkload) -> None:
    """The second workload waits for the first one's GPUs, so the pods' list shows its pod pending; the pods' watch
    then lags while the Job's says it completed. What is recorded is the pod's last state (the digest the baseline
    compares, the exit code), not the pending view's image tag, which made a wrong NOT COMPARABLE."""
    settings = replace(SETTINGS, scheduling_timeout_s=30.0)
    with cluster(faults=Faults(pod_update_lag_s=5.0), time_scale=0.001, settings=settings) as (_, kube):
        results = kube.run([*dcgm_workloads(NODES[:1], 8, 1, 600), second], deadline_s=30)
    for result in results:
        assert result.ok, result.reason
        assert "@sha256:" in result.image, result.image
        assert result.exit_code == 0


def test_a_deadline_counts_the_modelled_work_not_the_emulators_own_time() -> None:
    """At a time scale of 1e-6 the 600 s deadline is 0.6 ms of wall time, less than the emulator needs to create
    and schedule the pod: counted from the Job's creation it killed a job whose 60 s of work fit in it."""
    with cluster(time_scale=1e-6, runner=CannedRunner(duration_s=60.0)) as (_, kube):
        [result] = kube.run(dcgm_workloads(NODES[:1], 8, 1, 600), deadline_s=30)
    assert result.ok, result.reason


def test_work_longer_than_its_deadline_is_still_stopped_at_the_deadline() -> None:
    """An hour of work under a 60 s deadline: the deadline ends it (0.06 s scaled), not the work (3.6 s)."""
    with cluster(time_scale=0.001, runner=CannedRunner(duration_s=3600.0)) as (_, kube):
        [result] = kube.run(dcgm_workloads(NODES[:1], 8, 1, 60), deadline_s=30)
    assert result.status == "timeout"
    assert result.reason == "DeadlineExceeded: Job was active longer than specified deadline"


def test_oomkilled_is_a_clear_failure_with_the_partial_log() -> None:
    with cluster(faults=Faults(oom="dcgm-gpu-0002")) as (_, kube):
        results = kube.run(dcgm_workloads(NODES[:3], 8, 1, 600), deadline_s=30)
    oom = results[1]
    assert (oom.status, oom.exit_code) == ("failed", 137)
    assert oom.reason.startswith("OOMKilled: container dcgm-diag of pod dcgm-gpu-0002-t1-")
    assert results[0].ok
    assert results[2].ok


@pytest.mark.heavy  # waits out the grace for a lagging pod watch
def test_a_lagging_pod_watch_still_names_the_oomkill_not_the_jobs_backoff_limit() -> None:
    """The Job's watch says it failed (BackoffLimitExceeded) while the pods' watch still shows the pod running:
    the reason is the pod's own, read afresh. Before, only its exit code was (a loaded run's OOM test failed)."""
    with cluster(faults=Faults(oom="dcgm-gpu-0002", pod_update_lag_s=5.0), time_scale=0.001) as (_, kube):
        results = kube.run(dcgm_workloads(NODES[:3], 8, 1, 600), deadline_s=30)
    oom = results[1]
    assert (oom.status, oom.exit_code) == ("failed", 137)
    assert oom.reason.startswith("OOMKilled: container dcgm-diag of pod dcgm-gpu-0002-t1-"), oom.reason
    assert results[0].ok
    assert results[2].ok


def test_evicted_worker_fails_the_mpijob() -> None:
    with cluster(faults=Faults(evict="all-reduce-t1-worker-3", evict_after_s=1), time_scale=0.01) as (_, kube):
        [result] = kube.run([NCCL], deadline_s=30)
    assert result.status == "failed"
    assert result.reason.startswith("Evicted: pod all-reduce-t1-worker-3 on node gpu-0004: The node was low on")


@pytest.mark.heavy  # the node goes NotReady after a second of real time
def test_node_going_notready_fails_its_workload() -> None:
    with cluster(faults=Faults(node_not_ready={"gpu-0002": 1.0}), time_scale=0.01) as (_, kube):
        results = kube.run(dcgm_workloads(NODES[:3], 8, 1, 600), deadline_s=30)
        since = results[0].started
        assert since is not None
        node_events = kube.events(["gpu-0002", "gpu-0003"], since - timedelta(seconds=5))
    assert [r.status for r in results] == ["succeeded", "failed", "succeeded"]
    assert results[1].reason.startswith("node gpu-0002 NotReady (NodeStatusUnknown: Kubelet stopped posting")
    assert [(e.object, e.reason) for e in node_events] == [("Node/gpu-0002", "NodeNotReady")]


def _essence(results: list[WorkloadResult]) -> list[tuple[object, ...]]:
    return [(r.workload, r.status, r.exit_code, r.reason, r.output, dict(r.placement)) for r in results]


@pytest.mark.slow
def test_results_with_5xx_answers_and_dropped_watches_equal_a_clean_run() -> None:
    workloads = [*dcgm_workloads(NODES, 8, 3, 600), replace(NCCL, nodes=NODES[:8])]
    with cluster() as (_, kube):
        clean = kube.run(workloads, deadline_s=60)
    faults = Faults(error_rate=0.05, watch_drop_s=0.3, watch_gone_rate=0.3, seed=7)
    with cluster(faults=faults) as (_, kube):
        faulty = kube.run(workloads, deadline_s=60)
        assert kube.api.retries > 0, "the faults must have been hit"
    assert _essence(faulty) == _essence(clean)
    assert all(r.ok for r in clean)


def test_client_errors_are_not_retried_and_say_what_was_sent() -> None:
    with cluster() as (api, kube):
        kube.lease.hold()  # the run's lease is made at its first submission: count the Job's POSTs only
        before = api.requests_by_verb.get("POST", 0)
        with pytest.raises(KubeApiError, match=r"HTTP 422: Job.batch \"dcgm-bad-t1\" is invalid: .*sent: "):
            kube.submit([DcgmWorkload("dcgm-bad", "gpu-0001", -1, ("dcgmi",), 60)])
        assert api.requests_by_verb.get("POST", 0) - before == 1


@pytest.mark.heavy  # waits out its 0.5 s deadline
def test_a_wait_that_times_out_deletes_its_objects() -> None:
    with cluster(time_scale=1.0, run_id="2026-11-30T00:00:00Z/INC-1") as (api, kube):
        [result] = kube.run(dcgm_workloads(NODES[:1], 8, 3, 600), deadline_s=0.5)
        assert result.status == "timeout"
        assert "no final state within 0 s: pod dcgm-gpu-0001-2026-11-30t00-00-00z-inc-1-" in result.reason
        assert labelled(api, leases=False) == []


def test_cleanup_removes_what_a_crashed_run_left() -> None:
    with EmulatedApi(CannedRunner(), time_scale=1.0) as api:
        crashed = crashed_cluster(api)
        crashed.submit([*dcgm_workloads(NODES[:2], 8, 3, 600), replace(NCCL, nodes=NODES[2:4])])
        crash(crashed)
        assert labelled(api)
        with KubeCluster(SETTINGS, "next", api.api_client()) as kube:
            left = kube.leftovers()
        assert any(o.object.startswith("MPIJob/all-reduce-crashed") for o in left)
        assert {o.live_until for o in left} == {None}
        assert len(left) >= 4
        janitor = KubeCluster(SETTINGS, "janitor", api.api_client())
        assert janitor.remove_leftovers(older_than_s=3600) == []
        assert len(janitor.remove_leftovers(older_than_s=None)) >= 3
        assert labelled(api) == []


CHILD = """
import sys, time
sys.path.insert(0, {root!r})
from kubernetes import config
from acceptance.clusters.kube.cluster import KubeCluster
from tests.test_kube_e2e import SETTINGS, NODES, dcgm_workloads
client = config.new_client_from_config(config_file={kubeconfig!r})
with KubeCluster(SETTINGS, "interrupted", client) as kube:
    handles = kube.submit(dcgm_workloads(NODES[:4], 8, 3, 600))
    print("submitted", flush=True)
    kube.wait(handles, deadline_s=60)
"""


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupting_a_run_leaves_zero_labelled_objects(sig: int, tmp_path: Path) -> None:
    root = str(Path(__file__).resolve().parents[1])
    with EmulatedApi(CannedRunner(), time_scale=1.0) as api:
        script = tmp_path / "child.py"
        script.write_text(textwrap.dedent(CHILD.format(root=root, kubeconfig=str(api.kubeconfig_path))))
        env = {**os.environ, "PYTHONPATH": root}
        child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, env=env)  # fmt: skip
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "submitted"
        time.sleep(0.3)
        assert labelled(api)
        child.send_signal(sig)
        _, err = child.communicate(timeout=30)
        assert child.returncode != 0
        assert "KeyboardInterrupt" in err
        assert labelled(api) == []


def test_acceptance_cleanup_command_deletes_leftovers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`acceptance cleanup --cluster NAME` reads the profile's kube section and empties the namespace."""
    import yaml

    from acceptance.cli import main

    profile = yaml.safe_load((Path(__file__).resolve().parents[1] / "baselines/sim/cluster.yaml").read_text())
    with EmulatedApi(CannedRunner(), time_scale=1.0) as api:
        profile["backend"] = "kube"
        profile.pop("sim", None)
        profile["kube"]["kubeconfig"] = str(api.kubeconfig_path)
        (tmp_path / "prod").mkdir()
        (tmp_path / "prod" / "cluster.yaml").write_text(yaml.safe_dump(profile))
        crashed = crashed_cluster(api)
        crashed.submit(dcgm_workloads(NODES[:3], 8, 3, 600))
        crash(crashed)
        assert main(["cleanup", "--cluster", "prod", "--baselines-dir", str(tmp_path), "--older-than", "1h"]) == 0
        assert "0 object(s) deleted" in capsys.readouterr().out
        assert main(["cleanup", "--cluster", "prod", "--baselines-dir", str(tmp_path)]) == 0
        out = capsys.readouterr().out
        assert "deleting Job/dcgm-gpu-0001-crashed (run crashed, run ended)" in out
        assert labelled(api) == []


def test_a_live_runs_objects_are_another_run_not_leftovers_and_cleanup_keeps_them() -> None:
    """`acceptance cleanup` during a live run once deleted its objects, and the run then waited out its deadline."""
    from acceptance.judge.preflight import judge_leftovers

    with EmulatedApi(CannedRunner(), time_scale=1.0) as api:
        with KubeCluster(SETTINGS, "live", api.api_client()) as live:
            handles = live.submit(dcgm_workloads(NODES[:2], 8, 3, 600))
            other = KubeCluster(SETTINGS, "second", api.api_client())
            verdict = judge_leftovers(other.leftovers())
            assert verdict.summary.startswith("leftovers: another run is using this cluster now: live (lease until ")
            janitor = KubeCluster(SETTINGS, "janitor", api.api_client())
            assert janitor.remove_leftovers(older_than_s=None) == []
            assert labelled(api, leases=False), "the live run's objects are kept"
            found = janitor.remove_leftovers(older_than_s=None, include_live=True)
            assert {o.run_id for o in found} == {"live"}
            started = time.monotonic()
            results = live.wait(handles, deadline_s=600)
            assert time.monotonic() - started < 15, "a deleted object fails its wait at once"
            assert {r.status for r in results} == {"error"}
            assert all("was deleted while this run waited for it" in r.reason for r in results)
        assert labelled(api) == []
