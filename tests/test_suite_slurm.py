"""The acceptance suite on Slurm: a real slurmctld and one slurmd per node on loopback, the same verdicts.

Suite runs (slow, module-scoped): an 8-node variant of ``baselines/sim-slurm`` records its own handover
baseline once (signed with the simulator's demo key, as the shipped one is); every other run is judged
against it with the fault matrix `--cluster=sim` must meet, plus the two Slurm faults. The backend
itself (slow too): one simulated Slurm for the module, the backend's bad-input and fault paths, and after
each of them ``squeue`` shows no job of the run. The backend's tests come first and run while the suite runs
are made on threads of their own (`Ahead`): both mostly wait on Slurm. Skipped, with what to install, without
the packages.
"""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from acceptance.clusters.base import DcgmWorkload, NcclWorkload
from acceptance.clusters.slurm import commands
from acceptance.clusters.slurm.cluster import SlurmCluster
from acceptance.clusters.slurm.simulated import SimulatedSlurmCluster
from acceptance.clusters.slurm.transport import LocalTransport, Transport
from acceptance.errors import ClusterError
from acceptance.profile import load_profile_file
from acceptance.sim.model.faultspec import SimFaults
from acceptance.tools import slurm as tools
from tests.slurm_support import NEEDS_SLURM, settled_jobs, sim_slurm_profile, squeue_jobs
from tests.ssh_support import Run, SuiteRuns
from tests.suite_run import TEST_TIME_SCALE, Ahead, fault_runs, session_folder
from tests.test_suite_ssh import FAULT_CHECKS

pytestmark = [NEEDS_SLURM, pytest.mark.slow]


Runs = SuiteRuns


@pytest.fixture(scope="module", autouse=True)
def ahead(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ahead]:
    """The suite runs, from the module's first test on: the backend's own tests (first in the module, waiting on
    Slurm far more than working) go on beside them."""

    base = session_folder(tmp_path_factory, "suite-slurm")  # here: pytest's temp folders are not thread-safe

    def make() -> Runs:
        made = SuiteRuns.recorded(
            base,
            "sim-slurm",
            lambda b: sim_slurm_profile(b, nodes=8, time_scale=TEST_TIME_SCALE),
        )
        made.variants["mpirun"] = made.variant("mpirun", _with_mpirun)
        return made

    made = Ahead(request, make)
    try:
        yield made
    finally:
        made.join()


@pytest.fixture(scope="module")
def runs(ahead: Ahead) -> Runs:
    made: Runs = ahead.runs()
    return made


def _with_mpirun(profile: str) -> str:
    return profile.replace("\n  launch: srun\n", "\n  launch: mpirun\n")


# ---- the backend against one simulated Slurm ----------------------------------------------------------------


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimulatedSlurmCluster]:
    base = tmp_path_factory.mktemp("slurm-backend")
    profile = load_profile_file(sim_slurm_profile(base, nodes=4) / "cluster.yaml")
    cluster = SimulatedSlurmCluster.start(profile, "ra-20261202T0000-test", SimFaults())
    try:
        yield cluster
    finally:
        cluster.close()


def _of_run(cluster: SlurmCluster, run_id: str) -> list[tools.Job]:
    """The run's jobs in squeue, those still COMPLETING waited out (`settled_jobs`)."""
    return settled_jobs(cluster.transport, lambda job: job.comment == run_id)


Other = Callable[..., SlurmCluster]


@pytest.fixture
def other(sim: SimulatedSlurmCluster) -> Iterator[Other]:
    """Another backend (run id, settings) on the same simulated Slurm; closed (its lease no longer renewed) after."""
    made: list[SlurmCluster] = []

    def make(run_id: str, transport: Transport | None = None, **settings: object) -> SlurmCluster:
        replaced = dataclasses.replace(sim.settings, **settings)  # type: ignore[arg-type]
        made.append(SlurmCluster(sim.profile, run_id, transport or sim.transport, replaced))
        return made[-1]

    yield make
    for cluster in made:
        cluster._release()


def test_a_dcgm_step_per_node_runs_and_leaves_no_job(sim: SimulatedSlurmCluster) -> None:
    argv = ("bash", "-c", "nv-hostengine -n && exec dcgmi diag -r 1 -j")
    handles = sim.submit([DcgmWorkload(f"dcgm-{n}", n, 8, argv, deadline_s=300) for n in sim.profile.nodes[:2]])
    results = sim.wait(handles, 300)
    assert [r.status for r in results] == ["succeeded", "succeeded"], [r.reason + r.log_tail for r in results]
    assert all('"DCGM Diagnostic"' in r.output or "Diagnostic" in r.output for r in results)
    sim.cleanup()
    assert _of_run(sim, sim.run_id) == []


def test_an_unknown_partition_is_an_error_with_sbatch_s_own_words(sim: SimulatedSlurmCluster, other: Other) -> None:
    cluster = other("ra-20261202T0000-part", partition="no-such-partition")
    [handle] = cluster.submit([DcgmWorkload("d", "sim-node-01", 8, ("dcgmi", "diag", "-r", "1"), deadline_s=60)])
    [result] = cluster.wait([handle], 60)
    assert result.status == "error"
    assert "sbatch refused the job: `sbatch --parsable " in result.reason
    assert "--partition=no-such-partition" in result.reason
    assert "invalid partition" in result.reason.lower()
    assert _of_run(sim, cluster.run_id) == []


def test_an_account_the_partition_does_not_allow_ends_the_job_with_the_scheduler_s_reason(
    sim: SimulatedSlurmCluster, other: Other
) -> None:
    """Without accounting Slurm takes any account at submission; a partition's AllowAccounts leaves the job PENDING,
    and the wait ends it with what the scheduler says, instead of waiting out the deadline."""
    made = sim.transport.run("scontrol create PartitionName=acct-only Nodes=sim-node-01 AllowAccounts=acct-ml", 30)
    assert made.ok, made.said()
    try:
        cluster = other("ra-20261202T0000-acct", partition="acct-only", account="no-such-account",
                        pending_timeout_s=3.0)  # fmt: skip
        [handle] = cluster.submit([DcgmWorkload("d", "sim-node-01", 0, ("true",), deadline_s=300)])
        start = time.monotonic()
        [result] = cluster.wait([handle], 300)
        assert time.monotonic() - start < 60
        assert result.status == "unschedulable"
        assert "still PENDING after" in result.reason
        assert "account not known, so it can't use this partition (acct-only allows acct-ml)" in result.reason
        deadline = time.monotonic() + 30
        while _of_run(sim, cluster.run_id) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _of_run(sim, cluster.run_id) == []
    finally:
        sim.transport.run("scontrol delete PartitionName=acct-only", 30)


def test_a_job_that_stays_pending_is_cancelled_with_the_scheduler_s_reason(
    sim: SimulatedSlurmCluster, other: Other
) -> None:
    assert sim.slurm is not None
    sim.slurm.drain("sim-node-04", "test: pending")
    try:
        cluster = other("ra-20261202T0000-pend", pending_timeout_s=3.0)
        workload = NcclWorkload("all_reduce_perf", ("sim-node-03", "sim-node-04"), 8, ("all_reduce_perf", "-b", "8"))
        [handle] = cluster.submit([workload])
        start = time.monotonic()
        [result] = cluster.wait([handle], 120)
        assert time.monotonic() - start < 60
        assert result.status == "unschedulable"
        assert "still PENDING after" in result.reason
        assert "the scheduler's reason: " in result.reason
        assert result.reason.rsplit(": ", 1)[1] not in ("", "none given")
        deadline = time.monotonic() + 30
        while _of_run(sim, cluster.run_id) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _of_run(sim, cluster.run_id) == []
    finally:
        sim.slurm.resume("sim-node-04")


def test_cleanup_cancels_a_running_job_of_the_run_and_never_another_user_s_or_run_s(
    sim: SimulatedSlurmCluster, other: Other, tmp_path: Path
) -> None:
    mine = other("ra-20261202T0000-mine")
    theirs = other("ra-20261202T0000-theirs")
    long = ("bash", "-c", "sleep 300")
    [h1] = mine.submit([DcgmWorkload("long", "sim-node-01", 0, long, deadline_s=600)])
    [h2] = theirs.submit([DcgmWorkload("long", "sim-node-02", 0, long, deadline_s=600)])
    user_job = sim.transport.run("sbatch --parsable --job-name=train-gpt --comment=ra-20261202T0000-mine "
                                 f"--nodelist=sim-node-03 --time=5 --output={tmp_path}/user-job.out "
                                 "--wrap='sleep 300'", 30)  # fmt: skip
    assert user_job.ok, user_job.said()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and {j.state for j in squeue_jobs(sim.transport)} != {"RUNNING"}:
            time.sleep(0.5)
        found = mine.leftovers()
        assert [(item.run_id, "long" in item.object) for item in found] == [("ra-20261202T0000-theirs", True)]
        assert found[0].live_until is not None  # that run holds its lease: it is working now
        mine.cleanup()
        left = {j.job_id: j for j in squeue_jobs(sim.transport)}
        assert str(h1.manifests[0]["job_id"]) not in left
        assert str(h2.manifests[0]["job_id"]) in left  # another run's job is not touched by this run's cleanup
        assert commands.job_id_of(user_job.stdout) in left  # nor a job that is not the harness's
        assert mine.remove_leftovers(None) == []  # `acceptance cleanup` spares a live run
        assert str(h2.manifests[0]["job_id"]) in {j.job_id for j in squeue_jobs(sim.transport)}
        theirs._release()  # that run crashes: its lease is no longer renewed and runs out
        lease = f"{commands.run_folder(theirs.settings.run_dir, theirs.run_id)}/{commands.LEASE}"
        assert sim.transport.run(f"echo $(( $(date +%s) - 120 )) > {lease}", 10).ok
        assert mine.remove_leftovers(600) == []  # ended only 120 s ago
        removed = mine.remove_leftovers(60)  # `acceptance cleanup --older-than 1m` after the crash
        assert [(item.run_id, item.live_until) for item in removed] == [("ra-20261202T0000-theirs", None)]
        deadline = time.monotonic() + 30
        while _of_run(sim, theirs.run_id) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _of_run(sim, theirs.run_id) == []
        assert commands.job_id_of(user_job.stdout) in {j.job_id for j in squeue_jobs(sim.transport)}
    finally:
        sim.transport.run(f"scancel {commands.job_id_of(user_job.stdout)}", 30)


def test_a_scancel_that_fails_is_an_error_with_the_command_and_its_output(
    sim: SimulatedSlurmCluster, other: Other, tmp_path: Path
) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "scancel").write_text("#!/bin/sh\necho 'scancel: error: Kill job error on job id 1: Access denied' >&2\n"
                                  "exit 1\n")  # fmt: skip
    (fake / "scancel").chmod(0o755 | stat.S_IXUSR)
    assert isinstance(sim.transport, LocalTransport)
    env = {**sim.transport.env, "PATH": f"{fake}:{sim.transport.env['PATH']}"}
    broken = other("ra-20261202T0000-nocancel", LocalTransport(env))
    [handle] = broken.submit([DcgmWorkload("long", "sim-node-01", 0, ("bash", "-c", "sleep 300"), deadline_s=600)])
    try:
        with pytest.raises(ClusterError, match=r"scancel failed on this machine: `scancel --full \d+` exited 1: "
                                               r"scancel: error: Kill job error .*Access denied"):  # fmt: skip
            broken.cleanup()
    finally:
        sim.transport.run(f"scancel {handle.manifests[0]['job_id']}", 30)
    deadline = time.monotonic() + 30
    while _of_run(sim, broken.run_id) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _of_run(sim, broken.run_id) == []


def test_a_controller_that_does_not_answer_is_a_clear_error_not_a_hang(
    sim: SimulatedSlurmCluster, tmp_path: Path
) -> None:
    assert isinstance(sim.transport, LocalTransport)
    conf = Path(sim.transport.env["SLURM_CONF"]).read_text()
    port = next(line for line in conf.splitlines() if line.startswith("SlurmctldPort="))
    # nothing listens on port 9; a client retries a refused connection for MessageTimeout seconds
    dead_conf = conf.replace(port, "SlurmctldPort=9").replace("MessageTimeout=5", "MessageTimeout=1")
    assert "MessageTimeout=1" in dead_conf
    (tmp_path / "slurm.conf").write_text(dead_conf)
    env = {**sim.transport.env, "SLURM_CONF": str(tmp_path / "slurm.conf")}
    settings = dataclasses.replace(sim.settings, command_timeout_s=40.0)
    dead = SlurmCluster(sim.profile, "ra-20261202T0000-dead", LocalTransport(env), settings)
    start = time.monotonic()
    with pytest.raises(ClusterError, match=r"the Slurm controller does not answer on this machine: `scontrol"):
        dead.inventory()
    assert time.monotonic() - start < 90


def test_a_controller_lost_while_awaiting_a_job_is_an_error_result_naming_the_command(
    sim: SimulatedSlurmCluster, other: Other, tmp_path: Path
) -> None:
    assert isinstance(sim.transport, LocalTransport)
    conf = Path(sim.transport.env["SLURM_CONF"]).read_text()
    port = next(line for line in conf.splitlines() if line.startswith("SlurmctldPort="))
    # nothing listens on port 9; a client retries a refused connection for MessageTimeout seconds
    dead_conf = conf.replace(port, "SlurmctldPort=9").replace("MessageTimeout=5", "MessageTimeout=1")
    assert "MessageTimeout=1" in dead_conf
    (tmp_path / "slurm.conf").write_text(dead_conf)
    env = {**sim.transport.env, "SLURM_CONF": str(tmp_path / "slurm.conf")}
    live = other("ra-20261202T0000-lost")
    [handle] = live.submit([DcgmWorkload("long", "sim-node-01", 0, ("bash", "-c", "sleep 300"), deadline_s=600)])
    dead = SlurmCluster(sim.profile, live.run_id, LocalTransport(env), sim.settings)
    start = time.monotonic()
    [result] = dead.wait([handle], 600)
    assert time.monotonic() - start < 120
    assert result.status == "error"
    assert f"lost job {handle.manifests[0]['job_id']}: squeue on this machine: `squeue " in result.reason
    assert "Unable to contact slurm controller" in result.reason
    live.cleanup()  # the controller back: the run's end cancels the job
    assert _of_run(sim, live.run_id) == []


def test_node_signals_say_a_drained_node_s_reason(sim: SimulatedSlurmCluster) -> None:
    assert sim.slurm is not None
    sim.slurm.drain("sim-node-02", "test: signals")
    try:
        found = sim.node_signals(["sim-node-01", "sim-node-02"], datetime.now(UTC))
        [event] = [e for e in found if e.object == "Node/sim-node-02"]
        assert event.reason == "NodeNotReady"
        assert "Reason=test: signals" in event.message
        assert not [e for e in found if e.object == "Node/sim-node-01"]
    finally:
        sim.slurm.resume("sim-node-02")


def test_the_simulated_slurm_s_commands_see_only_its_own_environment(
    sim: SimulatedSlurmCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A harness started inside a Slurm job (SLURM_JOB_ID ... set) must not hand those to the simulated cluster."""
    monkeypatch.setenv("SLURM_JOB_ID", "424242")
    assert isinstance(sim.transport, LocalTransport)
    answer = sim.transport.run("env", 10)
    assert "SLURM_JOB_ID" not in answer.stdout
    assert f"SLURM_CONF={sim.env['SLURM_CONF']}" in answer.stdout


def test_a_node_the_controller_does_not_know_fails_the_preflight_and_the_rest_keep_their_gres(
    sim: SimulatedSlurmCluster,
) -> None:
    from acceptance.judge.preflight import judge_nodes

    profile = dataclasses.replace(sim.profile, nodes=("sim-node-01", "sim-node-99"))
    other = SlurmCluster(profile, "ra-20261202T0000-unknown", sim.transport, sim.settings)
    inventory = other.inventory()
    assert [n.name for n in inventory.nodes] == ["sim-node-01"]
    [node] = inventory.nodes
    assert (node.ready, node.allocatable_gpus) == (True, 8)
    assert node.labels["recovery-acceptance/slurm-gres"] == "gpu:h200:8"
    assert node.gpu_product == "NVIDIA H200"
    verdict = judge_nodes(inventory, profile.nodes, 8)
    assert "sim-node-99: not in the cluster" in verdict.summary
    assert _of_run(sim, other.run_id) == []  # the inventory step's job is gone too


class SiteRun:
    """Backend ``slurm`` as a site uses it (no ``sim`` section), against a simulated Slurm this test started and
    that outlives the suite run: `start` the suite, `running_dcgm` waits for its DCGM jobs."""

    def __init__(self, tmp_path: Path) -> None:
        import yaml

        (tmp_path / "slow").mkdir()
        slow = load_profile_file(sim_slurm_profile(tmp_path / "slow", nodes=2, time_scale=0.05) / "cluster.yaml")
        self.slurm = SimulatedSlurmCluster.start(slow, "ra-20261202T0000-host", SimFaults())
        data = yaml.safe_load(slow.path.read_text())
        del data["sim"]
        data["cluster"] = "rack-slurm"
        data["provider"]["cluster_id"] = "rack-slurm-0001"
        data["slurm"].update({"partition": "sim", "run_dir": str(tmp_path / "runs")})
        self.baselines = tmp_path / "site" / "baselines"
        folder = self.baselines / "rack-slurm"
        folder.mkdir(parents=True)
        (folder / "cluster.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
        (folder / "allowed_signers").write_text((slow.path.parent / "allowed_signers").read_text())
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        self.env.update({"SLURM_CONF": self.slurm.env["SLURM_CONF"],
                         "PATH": f"{self.slurm.env['PATH']}:{os.environ['PATH']}"})  # fmt: skip
        self.cwd = tmp_path / "site"

    def start(self) -> subprocess.Popen[str]:
        from tests.ssh_support import pytest_argv

        argv = pytest_argv(self.baselines, "rack-slurm", self.cwd / "report", "--record-baseline")
        return subprocess.Popen(argv, cwd=self.cwd, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)  # fmt: skip

    def running_dcgm(self) -> str:
        """The run id of the first DCGM job seen running."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            running = [j for j in squeue_jobs(self.slurm.transport) if "-dcgm-" in j.name and j.state == "RUNNING"]
            if running:
                return running[0].comment
            time.sleep(0.3)
        raise AssertionError("no DCGM job of the run started")

    def gone(self, run_id: str, within_s: float = 30) -> bool:
        deadline = time.monotonic() + within_s
        while _of_run(self.slurm, run_id) and time.monotonic() < deadline:
            time.sleep(0.5)
        return not _of_run(self.slurm, run_id)


@pytest.fixture
def site(tmp_path: Path) -> Iterator[SiteRun]:
    made = SiteRun(tmp_path)
    try:
        yield made
    finally:
        made.slurm.close()


def test_sigterm_during_dcgm_cancels_every_job_of_the_run_on_a_slurm_that_outlives_it(site: SiteRun) -> None:
    import signal

    with site.start() as proc:
        run_id = site.running_dcgm()
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
    assert site.gone(run_id), out[-3000:]
    assert "cleanup of run" not in out, out[-3000:]


def test_after_a_crash_acceptance_cleanup_finds_the_run_s_jobs_and_spares_them_while_its_lease_lives(
    site: SiteRun,
) -> None:
    import sys

    with site.start() as proc:
        run_id = site.running_dcgm()
        proc.kill()  # SIGKILL: no cleanup runs
        proc.communicate(timeout=60)
    assert _of_run(site.slurm, run_id), "the killed run's jobs should still be there"
    cleanup = [sys.executable, "-m", "acceptance", "cleanup", "--cluster", "rack-slurm", "--baselines-dir",
               str(site.baselines)]  # fmt: skip
    spared = subprocess.run(cleanup, cwd=site.cwd, env=site.env, capture_output=True, text=True, timeout=120,
                            check=False)  # fmt: skip
    assert run_id in spared.stdout + spared.stderr, spared.stdout + spared.stderr
    assert _of_run(site.slurm, run_id), "a run whose lease still lives is spared without --include-live"
    done = subprocess.run([*cleanup, "--include-live"], cwd=site.cwd, env=site.env, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert site.gone(run_id), done.stdout + done.stderr


def _first_job(site: SiteRun, proc: subprocess.Popen[str]) -> str:
    """The run id of the first job of the suite run seen in the queue (its inventory step, usually)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        mine = [j for j in squeue_jobs(site.slurm.transport) if j.name.startswith("ra-") and j.comment.startswith("ra-")
                and j.comment != site.slurm.run_id]  # fmt: skip
        if mine:
            return mine[0].comment
        time.sleep(0.1)
    raise AssertionError("no job of the run appeared")


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_a_run_killed_at_a_random_moment_leaves_no_job_once_acceptance_cleanup_ran(site: SiteRun, how: str) -> None:
    """Whatever the run was doing (inventory, DCGM, nccl-tests, the smoke job), its jobs end: with it on SIGTERM,
    by `acceptance cleanup --include-live` after SIGKILL (no cleanup ran, and its lease still lives)."""
    import random
    import signal
    import sys

    seed = random.randrange(1 << 30)
    delay = random.Random(seed).uniform(0.0, 8.0)
    with site.start() as proc:
        run_id = _first_job(site, proc)
        time.sleep(delay)
        proc.send_signal(getattr(signal, how))
        out, _ = proc.communicate(timeout=120)
    said = f"{how} {delay:.2f} s after the first job (seed {seed})"
    cleanup = [sys.executable, "-m", "acceptance", "cleanup", "--cluster", "rack-slurm", "--baselines-dir",
               str(site.baselines), "--include-live"]  # fmt: skip
    done = subprocess.run(cleanup, cwd=site.cwd, env=site.env, capture_output=True, text=True, timeout=120,
                          check=False)  # fmt: skip
    assert done.returncode == 0, f"{said}: {done.stdout}{done.stderr}"
    assert site.gone(run_id), f"{said}: {_of_run(site.slurm, run_id)}\n{out[-2000:]}"
    assert "Traceback" not in done.stderr, done.stderr


# ---- suite runs (made from the module's start, judged after the backend's tests) ----------------------------


def _no_cleanup_problem(run: Run) -> None:
    text = run.stdout + run.stderr
    assert "cleanup of run" not in text, text[-2000:]
    assert "Traceback" not in run.stderr


def test_recording_on_slurm_keeps_the_scheduler_version_and_the_identity_of_the_cluster(runs: Runs) -> None:
    [path] = (runs.baselines / "sim-slurm").glob("handover-*.json")
    baseline = json.loads(path.read_text())
    assert baseline["conditions"]["kubernetes_version"].startswith("slurm")
    assert baseline["identity"]["cluster"] == "sim-slurm"
    assert baseline["identity"]["provider_cluster_id"] == "sim-slurm-h200-0001"
    assert baseline["provenance"]["simulated"] is True


@pytest.mark.suite_run
def test_the_healthy_suite_is_accepted_on_slurm_with_its_jobs_as_evidence(suite_run: Run) -> None:
    run = suite_run
    assert run.returncode == 0, run.stdout[-3000:]
    outcomes = run.outcomes()
    assert outcomes.pop("test_recurrence::test_no_recurrence") == "skipped"
    assert set(outcomes.values()) == {"passed"}
    assert "SIMULATED Slurm cluster: a real slurmctld and 8 slurmd on loopback" in run.stdout
    manifest = (run.report / "manifests" / "nccl" / "all_reduce_perf.yaml").read_text()
    assert "kind: SlurmJob" in manifest
    assert "--nodes=8" in manifest
    assert "srun --mpi=pmi2 --nodes=8 --ntasks-per-node=8 --gpus-per-node=8" in manifest
    dcgm = (run.report / "manifests" / "dcgm" / "sim-node-05.yaml").read_text()
    assert "--nodelist=sim-node-05" in dcgm
    assert "--comment=ra-" in dcgm
    assert "--time=" in dcgm
    _no_cleanup_problem(run)


@pytest.mark.parametrize(("fault", "expected"), fault_runs(FAULT_CHECKS))
def test_an_injected_fault_fails_the_same_criteria_as_on_the_kubernetes_simulator(
    suite_run: Run, fault: str, expected: str
) -> None:
    run = suite_run
    assert run.returncode == 1, run.stdout[-3000:]
    assert run.failing_modules() == set(expected.split(","))
    _no_cleanup_problem(run)


@pytest.mark.parametrize(
    ("fault", "said"),
    fault_runs([("node-drain@sim-node-06", "Reason=recovery-acceptance simulator: node-drain fault"),
                ("slurmd-down@sim-node-04", "NOT_RESPONDING")]),
)  # fmt: skip
def test_a_node_slurm_does_not_schedule_fails_the_preflight_naming_it_and_why_not_hardware(
    suite_run: Run, fault: str, said: str
) -> None:
    run = suite_run
    assert run.returncode == 1, run.stdout[-3000:]
    assert run.failing_modules() == {"test_preflight"}
    node = fault.split("@")[1]
    message = run.message("test_node_set_ready")
    assert f"{node}: NotReady (Slurm state " in message
    assert said in message
    if fault.startswith("node-drain"):
        assert "(set by root at " in message
    _no_cleanup_problem(run)


@pytest.mark.suite_run("--sim-fault=node-reserved@sim-node-05")
def test_a_node_in_a_maint_reservation_fails_the_preflight_naming_the_reservation(suite_run: Run) -> None:
    """Slurm's node state says nothing yet right after the reservation is made: the reservation is named."""
    run = suite_run
    assert run.returncode == 1, run.stdout[-3000:]
    assert run.failing_modules() == {"test_preflight"}
    message = run.message("test_node_set_ready")
    assert "sim-node-05: NotReady (in reservation sim-maint-sim-node-05 (flags MAINT,SPEC_NODES; ACTIVE " in message
    assert "not the profile's" in message
    _no_cleanup_problem(run)


@pytest.mark.suite_run("--sim-fault=nic-degraded@sim-node-07")  # the fault matrix's run
def test_a_degraded_nic_is_named_by_localization_rounds_run_as_slurm_jobs(suite_run: Run) -> None:
    run = suite_run
    props = run.properties("test_nccl_busbw[all_reduce_perf]")
    assert (props["culprit"], props["culprit_kind"]) == ("sim-node-07", "nic"), props
    assert "sim-node-07" in run.message("test_nccl_busbw[all_reduce_perf]")
    rounds = [p for p in (run.report / "manifests").rglob("*.yaml") if "localize" in str(p)]
    assert rounds, "the localization rounds' jobs are evidence too"
    assert all("kind: SlurmJob" in p.read_text() for p in rounds)


def _jobs(run: Run) -> list[str]:
    """The jobs a run submitted, by name without its run id (``ra-<run id>-nccl-all_reduce_perf`` → ``nccl-...``)."""
    import yaml

    names = []
    for path in (run.report / "manifests").rglob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "SlurmJob":
                names.append(str(doc["name"]).removeprefix(f"{doc['run_id']}-"))
    return sorted(names)


@pytest.mark.suite_run("-n", "4")
def test_four_xdist_workers_join_the_controller_s_slurm_give_its_verdicts_and_submit_each_job_once(
    runs: Runs, suite_run: Run
) -> None:
    """Four workers use the controller's Slurm: each node's DCGM job is submitted once, and the jobs and
    verdicts are those of one process (the healthy test's run)."""
    alone, four = runs.get(), suite_run
    assert four.returncode == alone.returncode == 0, four.stdout[-3000:]
    assert "ACCEPTED" in four.stdout
    names = [p.name for p in (four.report / "manifests" / "dcgm").glob("*.yaml")]
    assert sorted(names) == [f"sim-node-{i:02d}.yaml" for i in range(1, 9)]
    assert four.outcomes() == alone.outcomes()
    assert _jobs(four) == _jobs(alone)
    assert len(_jobs(alone)) == len(set(_jobs(alone))) > 8, _jobs(alone)
    _no_cleanup_problem(four)


# the variant is a copy of the cluster's folder: rewriting the shared profile raced the runs other workers made
# meanwhile (a bad-restore run once read "mpirun" and failed the fabric as not comparable)
@pytest.mark.suite_run("-k", "not recurrence", variant="mpirun")
def test_the_launch_is_a_condition_of_the_handover_and_another_launch_is_not_comparable(
    runs: Runs, suite_run: Run
) -> None:
    [path] = (runs.baselines / "sim-slurm").glob("handover-*.json")
    conditions = json.loads(path.read_text())["conditions"]
    assert conditions["nccl"]["all_reduce_perf"]["launch"] == "srun --mpi=pmi2"
    assert conditions["smoke"] == {"launch": "srun --mpi=pmi2"}
    assert "\n  launch: srun\n" in (runs.baselines / "sim-slurm" / "cluster.yaml").read_text()
    assert "\n  launch: mpirun\n" in (runs.variants["mpirun"].baselines / "sim-slurm" / "cluster.yaml").read_text()
    run = suite_run
    assert run.returncode == 1, run.stdout[-3000:]
    assert run.failing_modules() == {"test_fabric", "test_smoke_step"}, run.outcomes()
    said = "launched with mpirun now, srun --mpi=pmi2 at handover"
    assert said in run.message("test_nccl_busbw[all_reduce_perf]")
    assert said in run.message("test_smoke_step_time")
    assert "NOT COMPARABLE" in run.stdout or "not comparable" in run.stdout
    _no_cleanup_problem(run)
