"""The simulated Slurm of --cluster=sim-slurm: its configuration (fast) and the real daemons (slow: munged,
slurmctld and 16 slurmd on loopback; skipped when the Debian packages are absent)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from acceptance.errors import UsageError
from acceptance.sim.slurm import daemons
from acceptance.sim.slurm.config import ClusterSpec, Layout, gres_conf, node_names, slurm_conf
from acceptance.tools import slurm as tools

ROOT = Path(__file__).resolve().parents[1]


def _own_daemons(folder: str) -> list[int]:
    """Live processes whose command line names `folder` (our daemons only)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                state = (entry / "stat").read_text().split(")")[-1].split()[0]
            except OSError:
                continue
            if folder in cmd and state != "Z":
                out.append(int(entry.name))
    return out


# ---- fast: configuration and the usage error ---------------------------------------------------------------


def test_config_one_port_and_eight_device_files_per_node(tmp_path: Path) -> None:
    names = node_names(16)
    assert names[0] == "sim-node-01"
    assert names[-1] == "sim-node-16"
    lay = Layout(tmp_path)
    ports = {n: 17001 + i for i, n in enumerate(names)}
    conf = slurm_conf(ClusterSpec(names), lay, 16817, ports)
    assert "SelectType=select/cons_tres" in conf
    assert "GresTypes=gpu" in conf
    assert f"AuthInfo=socket={lay.munge_socket}" in conf
    assert "NodeName=sim-node-07 NodeAddr=127.0.0.1 Port=17007 " in conf
    assert conf.count("Gres=gpu:h200:8") == 16
    gres = gres_conf(ClusterSpec(names), lay)
    assert f"NodeName=sim-node-16 Name=gpu Type=h200 File={tmp_path}/dev/sim-node-16/nvidia[0-7]\n" in gres
    assert "Count=" not in gres  # a Count= alone drains the node: "gres/gpu count reported lower than configured"


def test_without_the_packages_a_usage_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(daemons, "missing", lambda: ["slurmd", "munge"])
    with pytest.raises(UsageError, match=r"missing slurmd, munge; install with: apt-get install .*slurmctld slurmd"):
        daemons.SimSlurm.start(2)


def test_a_stale_marker_never_ends_or_removes_anything_outside_a_run_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Markers naming a folder that is not a run folder of this harness (relative, without its own marker, not
    made by it) end no process and remove nothing. Every decoy lives under tmp_path, so even a regression of
    the guard can only touch this test's own files and process."""
    monkeypatch.setattr(daemons, "MARKERS", tmp_path / "markers")
    monkeypatch.chdir(tmp_path)
    decoys = {"relative": "rel", "nomarker": str(tmp_path / "plain"), "notmine": str(tmp_path / "given")}
    for folder in decoys.values():
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "keep.txt").write_text("x")
    (tmp_path / "given" / "daemons.json").write_text("{}")  # a user-given folder: its daemons end, it stays
    with subprocess.Popen(["true"]) as gone:
        gone.wait()
    argv = [sys.executable, "-c", "import time; time.sleep(30)", f"{tmp_path}/plain/x"]
    with subprocess.Popen(argv, start_new_session=True) as bystander:
        try:
            (tmp_path / "markers").mkdir(mode=0o700)
            for name, folder in decoys.items():
                marker = {"owner": gone.pid, "folder": folder, "remove": True, "pids": {"slurmd-x": bystander.pid}}
                (tmp_path / "markers" / f"{name}.json").write_text(json.dumps(marker))
            assert daemons.cleanup_stale() == [str(tmp_path / "given")]
            time.sleep(0.3)
            assert bystander.poll() is None
            assert all((tmp_path / folder / "keep.txt").is_file() for folder in decoys.values())
            assert list((tmp_path / "markers").iterdir()) == []
        finally:
            bystander.kill()


def test_stop_never_removes_a_folder_it_was_given(tmp_path: Path) -> None:
    given = tmp_path / "state"
    given.mkdir()
    (given / "keep.txt").write_text("x")
    slurm = daemons.SimSlurm(ClusterSpec(("sim-node-01",)), Layout(given), 0, {"sim-node-01": 0})
    assert slurm.stop() == []
    assert (given / "keep.txt").is_file()


# ---- slow: the real daemons --------------------------------------------------------------------------------

needs_slurm = pytest.mark.skipif(
    bool(daemons.missing()), reason=f"a real Slurm needs: {', '.join(daemons.missing())} (see .ci/run)"
)


@pytest.fixture(scope="module")
def cluster() -> Iterator[daemons.SimSlurm]:
    started = time.monotonic()
    slurm = daemons.SimSlurm.start(16, deadline_s=120)
    print(f"simulated Slurm with 16 nodes up in {time.monotonic() - started:.1f} s")
    folder = str(slurm.layout.root)
    try:
        yield slurm
    finally:
        left = slurm.stop()
    assert left == []
    assert _own_daemons(folder) == []
    assert not Path(folder).exists()


@pytest.fixture
def run_id(cluster: daemons.SimSlurm) -> Iterator[str]:
    rid = "t" + uuid.uuid4().hex[:10]
    yield rid
    for job in cluster.jobs(rid):
        cluster.run(["scancel", job.job_id], check=False)
    deadline = time.monotonic() + 30
    while cluster.jobs(rid) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert cluster.jobs(rid) == ()


def _sbatch(cluster: daemons.SimSlurm, rid: str, *extra: str) -> str:
    # --output: the batch step's file (slurm-JOB.out, slurmstepd's CANCELLED line) went to the checkout
    out = cluster.run(["sbatch", "--parsable", f"--job-name=ra-{rid}", f"--comment={rid}", "--time=1",
                       "--output=/dev/null", *extra, "--wrap", "sleep 60"]).stdout  # fmt: skip
    return out.strip().split(";")[0]


@pytest.mark.slow
@needs_slurm
def test_every_node_idle_with_eight_gpus(cluster: daemons.SimSlurm) -> None:
    nodes = cluster.show_nodes()
    assert sorted(nodes) == list(node_names(16))
    assert {str(n.state) for n in nodes.values()} == {"IDLE"}
    assert {n.gres for n in nodes.values()} == {(tools.Gres("gpu", "h200", 8),)}
    assert {n.partitions for n in nodes.values()} == {("sim",)}


@pytest.mark.slow
@needs_slurm
def test_srun_two_nodes_eight_gpus_each(cluster: daemons.SimSlurm, run_id: str) -> None:
    out = cluster.run(["srun", "-N2", "--gpus-per-node=8", f"--job-name=ra-{run_id}", f"--comment={run_id}",
                       "--time=1", "bash", "-c", "echo $SLURMD_NODENAME=$CUDA_VISIBLE_DEVICES"]).stdout  # fmt: skip
    seen = dict(line.split("=", 1) for line in out.split())
    assert len(seen) == 2
    assert set(seen.values()) == {"0,1,2,3,4,5,6,7"}
    assert set(seen) <= set(node_names(16))


@pytest.mark.slow
@needs_slurm
def test_mpi_launch_without_pmix(cluster: daemons.SimSlurm, run_id: str) -> None:
    tag = [f"--job-name=ra-{run_id}", f"--comment={run_id}", "--time=1"]
    pmi2 = cluster.run(["srun", "-N2", "--mpi=pmi2", *tag, "bash", "-c", "echo $SLURMD_NODENAME:$PMI_RANK"]).stdout
    assert sorted(x.split(":")[1] for x in pmi2.split()) == ["0", "1"]
    assert len({x.split(":")[0] for x in pmi2.split()}) == 2
    mpi = cluster.run(["salloc", "-N2", *tag, "mpirun", "--allow-run-as-root", "-np", "2", "--map-by", "node",
                       "bash", "-c", "echo $SLURMD_NODENAME"], timeout_s=90).stdout  # fmt: skip
    assert len(set(mpi.split())) == 2


@pytest.mark.slow
@needs_slurm
def test_sbatch_named_and_bounded_then_scancel(cluster: daemons.SimSlurm, run_id: str) -> None:
    other = "o" + run_id
    mine = _sbatch(cluster, run_id)
    theirs = _sbatch(cluster, other)
    try:
        jobs = {j.job_id: j for j in cluster.jobs(run_id)}
        assert list(jobs) == [mine]
        assert (jobs[mine].name, jobs[mine].comment) == (f"ra-{run_id}", run_id)
        assert jobs[mine].state in ("RUNNING", "PENDING", "CONFIGURING")
        data = tools.parse_squeue_json(cluster.run(["squeue", "--json"]).stdout)
        assert [j.job_id for j in data if j.comment == run_id] == [mine]
        cluster.run(["scancel", mine])
        deadline = time.monotonic() + 20
        while cluster.jobs(run_id) and time.monotonic() < deadline:
            time.sleep(0.3)
        assert cluster.jobs(run_id) == ()
        assert [j.job_id for j in cluster.jobs(other)] == [theirs]  # another run's job is not touched
    finally:
        cluster.run(["scancel", theirs], check=False)


@pytest.mark.slow
@needs_slurm
def test_node_drain_read_back_through_the_parsers(cluster: daemons.SimSlurm, run_id: str) -> None:
    reason = f"acceptance fault node-drain@sim-node-05 run {run_id}"
    cluster.drain("sim-node-05", reason)
    try:
        node = cluster.nodes()["sim-node-05"]
        assert node.state.drained
        assert not node.state.usable
        assert (node.reason, node.reason_user) == (reason, "root")
        assert node.reason_time is not None
        shown = cluster.show_nodes()["sim-node-05"]
        assert str(shown.state) == "IDLE+DRAIN"
        assert (shown.reason, shown.reason_user, shown.reason_time) == (reason, "root", node.reason_time)
        assert [n for n, v in cluster.nodes().items() if v.state.drained] == ["sim-node-05"]
    finally:
        cluster.resume("sim-node-05")
    cluster.wait_nodes(lambda n: n.state.usable, 30, "sim-node-05 back", ["sim-node-05"])


@pytest.mark.slow
@needs_slurm
def test_slurmd_down_not_responding_then_down(cluster: daemons.SimSlurm, run_id: str) -> None:
    cluster.stop_slurmd("sim-node-07")
    try:
        cluster.wait_nodes(lambda n: n.state.not_responding, 40, "sim-node-07 NOT_RESPONDING", ["sim-node-07"])
        cluster.wait_nodes(lambda n: n.state.down, 60, "sim-node-07 DOWN", ["sim-node-07"])
        shown = cluster.show_nodes()["sim-node-07"]
        assert "NOT_RESPONDING" in shown.state.flags
        assert shown.state.base == "DOWN"
        assert shown.reason == "Not responding"
        assert all(v.state.usable for n, v in cluster.nodes().items() if n != "sim-node-07")
    finally:
        cluster.start_slurmd("sim-node-07")
    cluster.wait_nodes(lambda n: n.state.usable, 60, "sim-node-07 back", ["sim-node-07"])


_KILLED = """
import os, sys
from acceptance.sim.slurm.daemons import SimSlurm
slurm = SimSlurm.start(2, deadline_s=60)
print(slurm.layout.root, flush=True)
sys.stdin.read()
"""


_CLEANUP = """
from acceptance.sim.slurm.daemons import cleanup_stale
print(*cleanup_stale())
"""


@pytest.mark.slow
@needs_slurm
def test_daemons_end_when_the_harness_is_killed(cluster: daemons.SimSlurm) -> None:
    """The killed harness keeps its folder and markers in a temp folder of its own (TMPDIR), so that another
    session's start, which ends every stale run it finds, leaves this one to the test."""
    private = Path(tempfile.mkdtemp(prefix="ra-t-"))  # short: munged's socket path must fit a sockaddr
    private.chmod(0o755)  # munged runs as user munge and must reach its socket below
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(private))
    try:
        with subprocess.Popen([sys.executable, "-c", _KILLED], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              env=env, text=True) as proc:  # fmt: skip
            assert proc.stdout is not None
            folder = proc.stdout.readline().strip()
            assert folder
            assert Path(folder).parent == private
            assert len(_own_daemons(folder)) == 4  # munged, slurmctld, two slurmd
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
        deadline = time.monotonic() + 15
        while _own_daemons(folder) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _own_daemons(folder) == []
        assert Path(folder).exists()
        cleaned = subprocess.run([sys.executable, "-c", _CLEANUP], env=env, capture_output=True, text=True,
                                 check=True, timeout=60).stdout.split()  # fmt: skip
        assert cleaned == [folder]
        assert not Path(folder).exists()
        daemons.cleanup_stale()
        assert len(cluster.nodes()) == 16  # the live run of this process is not a stale one
    finally:
        shutil.rmtree(private, ignore_errors=True)


#: runs its arguments with SIGINT ignored, as a shell without job control starts a background job
_IGNORING_SIGINT = (
    "import os, signal, sys\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nos.execv(sys.argv[1], sys.argv[1:])"
)


@pytest.mark.slow
@needs_slurm
@pytest.mark.parametrize("inherited", ["SIGINT handled", "SIGINT ignored"])
def test_python_m_entry_starts_prints_usage_and_stops_on_ctrl_c(inherited: str) -> None:
    """Also when started with SIGINT ignored, as a script's background job is: Python keeps an inherited
    SIG_IGN, and the Ctrl-C sent on purpose once left it running (this test waited on it for ever)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    argv = [sys.executable, "-m", "acceptance.sim.slurm", "--nodes", "2"]
    if inherited == "SIGINT ignored":
        argv = [sys.executable, "-c", _IGNORING_SIGINT, *argv]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True) as proc:
        assert proc.stdout is not None
        head = [proc.stdout.readline() for _ in range(4)]
        folder = head[0].rsplit(" in ", 1)[1].strip()
        assert head[0].startswith("simulated Slurm up: 2 nodes, 8 GPUs each")
        assert head[1].strip() == f"export SLURM_CONF={folder}/etc/slurm.conf"
        assert len(_own_daemons(folder)) == 4
        proc.send_signal(signal.SIGINT)
        try:
            assert proc.wait(timeout=30) == 0
        finally:  # never a wait without a deadline in Popen's exit
            if proc.poll() is None:
                proc.kill()
    assert _own_daemons(folder) == []
    assert not Path(folder).exists()


def test_a_runs_job_steps_are_found_by_their_slurm_conf_and_ended(tmp_path: Path) -> None:
    """slurmstepd renames itself (``slurmstepd: [2.batch]``), so a step is found by the SLURM_CONF of its
    environment; a process of another run's Slurm is never touched. (Two steps of a helper's killed test run
    were found alive an hour later, orphaned to init; stop() and cleanup_stale now end such steps.)"""
    mine, other = tmp_path / "acceptance-slurm-mine", tmp_path / "acceptance-slurm-other"
    procs = [
        subprocess.Popen(["/bin/sleep", "60"], env={"SLURM_CONF": f"{folder}/etc/slurm.conf"})
        for folder in (mine, mine, other)
    ]
    try:
        found = daemons.steps_of(str(mine))
        assert sorted(found) == sorted(p.pid for p in procs[:2])
        assert daemons._end_steps(str(mine), grace_s=5) == []
        assert [p.wait(timeout=5) for p in procs[:2]] == [-15, -15]
        assert procs[2].poll() is None, "another run's step is untouched"
        assert daemons.steps_of(str(mine)) == []
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=5)


@pytest.mark.slow
@needs_slurm
def test_a_slurmd_that_cannot_listen_stops_the_start_at_once_with_its_own_words(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A node's port taken before its slurmd binds it (what a released port allows): the start ends when that
    slurmd exits, naming it and what it logged, not 90 s later with the node `unknown*`."""
    from acceptance.errors import ClusterError
    from acceptance.sim import ports

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()

        def taken_last(count: int) -> list[int]:
            return [*ports.reserve(count - 1), held.getsockname()[1]]

        monkeypatch.setattr(daemons, "reserve", taken_last)
        started = time.monotonic()
        with pytest.raises(ClusterError) as caught:
            daemons.SimSlurm.start(2, deadline_s=60).stop()
    said = str(caught.value)
    assert said.startswith("simulated Slurm: slurmd-sim-node-02 exited while waiting for every node IDLE: "), said
    assert "Address already in use" in said
    assert time.monotonic() - started < 30


@needs_slurm
def test_a_folder_user_munge_cannot_enter_is_refused_before_any_daemon_starts(tmp_path: Path) -> None:
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    with pytest.raises(UsageError, match=f"below {closed}, which user munge cannot enter .*set TMPDIR"):
        daemons.SimSlurm.start(2, folder=closed / "slurm")
    assert not (closed / "slurm" / "munge").exists()


@pytest.mark.slow
@needs_slurm
def test_a_wait_in_vain_names_the_late_node_its_state_and_its_slurmd_s_last_words(cluster: daemons.SimSlurm) -> None:
    from acceptance.errors import ClusterError

    with pytest.raises(ClusterError) as caught:
        cluster.wait_nodes(lambda n: n.state.down, 1, "sim-node-05 DOWN", ["sim-node-05"])
    said = str(caught.value)
    assert said.startswith("simulated Slurm: waited 1 s for sim-node-05 DOWN in vain: not yet: sim-node-05 idle; "
                           "slurmd-sim-node-05 last said: "), said  # fmt: skip
    assert said.split("last said: ", 1)[1] not in ("", "it wrote nothing"), said  # its own log's last lines
    assert "logs in" not in said  # the folder goes with stop()
