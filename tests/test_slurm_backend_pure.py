"""The Slurm backend's pure parts: job names and run ids, --time, sbatch argv and batch scripts, node states for
the preflight, the simulated Slurm's faults and step wrappers (fast, no Slurm needed)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from acceptance.clusters.base import DcgmWorkload, NcclWorkload, SmokeWorkload
from acceptance.clusters.slurm import commands
from acceptance.clusters.slurm.cluster import node_reason, not_usable
from acceptance.clusters.slurm.simulated import step_wrapper
from acceptance.errors import ProfileError, UsageError
from acceptance.profile import load_profile, load_profile_file
from acceptance.sim.model.faultspec import SchedulerFault, SimFaults
from acceptance.tools import slurm as tools

ROOT = Path(__file__).resolve().parents[1]
OPTS = commands.JobOptions(run_id="ra-20261202T1000-ab12", run_dir="/shared/ra", partition="gpu", account="acct7")


def test_job_names_carry_the_run_id_once_and_run_of_finds_it_only_for_our_jobs() -> None:
    assert commands.job_name("ra-20261202T1000-ab12", "dcgm", "dcgm-sim-node-05") == (
        "ra-20261202T1000-ab12-dcgm-dcgm-sim-node-05"
    )
    assert commands.job_name("20261202", "nccl", "a b/c") == "ra-20261202-nccl-a_b_c"
    ours = tools.Job("7", name="ra-20261202T1000-ab12-nccl-all_reduce_perf", comment="ra-20261202T1000-ab12")
    assert commands.run_of(ours) == "ra-20261202T1000-ab12"
    other_run = tools.Job("8", name="ra-20261202T1000-ab12-nccl-x", comment="ra-20261202T1100-cd34")
    user_job = tools.Job("9", name="train-gpt", comment="ra-20261202T1000-ab12")  # a comment alone is not ours
    no_comment = tools.Job("10", name="ra-(null)-x", comment="(null)")
    assert [commands.run_of(j) for j in (other_run, user_job, no_comment)] == [None, None, None]


@pytest.mark.parametrize(
    ("deadline", "slack", "expected"),
    [(0, 0, "0-00:01:00"), (3600, 300, "0-01:05:00"), (61, 0, "0-00:02:00"), (86400 * 2 + 59, 1, "2-00:01:00")],
)
def test_time_limit_rounds_up_to_whole_minutes_in_slurm_form(deadline: float, slack: float, expected: str) -> None:
    assert commands.time_limit(deadline, slack) == expected


def _step(script: str) -> list[str]:
    """The launch line(s) of a batch script, split as the shell would."""
    body = script.rsplit("\nrc=$?\n", 1)[0]
    return shlex.split(body.split("\n", 2)[2])


def test_dcgm_is_one_job_of_one_node_whose_step_holds_its_gpus() -> None:
    w = DcgmWorkload("dcgm-sim-node-05", "sim-node-05", 8, ("dcgmi", "diag", "-r", "3", "-j"), deadline_s=3600)
    job = commands.plan(OPTS, w, {"NCCL_X": "1"})
    out = "/shared/ra/ra-20261202T1000-ab12/dcgm-sim-node-05.dcgm.out"
    assert job.argv == (
        "sbatch", "--parsable", "--job-name=ra-20261202T1000-ab12-dcgm-dcgm-sim-node-05",
        "--comment=ra-20261202T1000-ab12", "--time=0-01:05:00", f"--output={out}", "--no-requeue", "--export=ALL",
        "--chdir=/shared/ra/ra-20261202T1000-ab12", "--partition=gpu", "--account=acct7", f"--error={out}.err",
        "--nodelist=sim-node-05", "--nodes=1", "--ntasks=1", "--gpus-per-node=8",
    )  # fmt: skip
    lines = job.script.splitlines()
    assert lines[0] == "#!/bin/bash"
    assert "NCCL_X" not in job.script  # DCGM gets no workload environment
    assert lines[-3:] == ["rc=$?", f'echo "$rc" > {out}.rc.tmp && mv {out}.rc.tmp {out}.rc', 'exit "$rc"']
    step = _step(job.script)
    assert step[:7] == ["srun", "--nodelist=sim-node-05", "--nodes=1", "--ntasks=1", "--gpus-per-node=8", "bash", "-c"]
    assert step[7].strip() == "exec dcgmi diag -r 3 -j"
    assert job.nodes == ("sim-node-05",)


def test_the_embedded_host_engine_guard_keeps_one_pidfile_per_node_and_run() -> None:
    embedded = ("bash", "-c", "nv-hostengine -n --service-account nvidia-dcgm && exec dcgmi diag -r 3 -j")
    job = commands.plan(OPTS, DcgmWorkload("d", "n1", 8, embedded), {})
    step = _step(job.script)
    assert step[:7] == ["srun", "--nodelist=n1", "--nodes=1", "--ntasks=1", "--gpus-per-node=8", "bash", "-c"]
    assert "dcgmi diag -r 3 -j" in step[7]
    assert 'nv-hostengine --pid "$PWD/nv-hostengine.ra-20261202T1000-ab12.$SLURMD_NODENAME.pid"' in step[7]


def test_nccl_is_one_allocation_over_its_nodes_launched_with_srun_mpi_and_its_environment() -> None:
    w = NcclWorkload("all_reduce_perf", ("n1", "n2", "n3"), 8, ("all_reduce_perf", "-b", "8"), {"NCCL_DEBUG": "INFO"},
                     deadline_s=1800)  # fmt: skip
    job = commands.plan(OPTS, w, {"NCCL_IB_HCA": "=mlx5_0"})
    assert job.argv[-4:] == ("--nodelist=n1,n2,n3", "--nodes=3", "--ntasks-per-node=8", "--gpus-per-node=8")
    assert "--time=0-00:35:00" in job.argv
    lines = job.script.splitlines()
    assert "export NCCL_DEBUG=INFO" in lines
    assert "export NCCL_IB_HCA==mlx5_0" in lines
    assert lines[-4] == ("srun --mpi=pmi2 --nodes=3 --ntasks-per-node=8 --gpus-per-node=8 --kill-on-bad-exit=1 "
                         "all_reduce_perf -b 8")  # fmt: skip


def test_mpirun_launch_inside_the_allocation_and_no_partition_or_account_when_unset() -> None:
    opts = commands.JobOptions(run_id="r1", run_dir="/tmp/x", launch="mpirun")
    job = commands.plan(opts, SmokeWorkload("smoke", ("n1", "n2"), 4, ("python", "pretrain_gpt.py")), {})
    assert not [a for a in job.argv if a.startswith(("--partition", "--account"))]
    assert job.script.splitlines()[-4] == (
        "mpirun --allow-run-as-root -np 8 --map-by ppr:4:node --bind-to none python pretrain_gpt.py"
    )


def test_the_launch_a_baseline_records_is_the_one_the_job_script_runs() -> None:
    nccl = NcclWorkload("all_reduce_perf", ("n1", "n2"), 8, ("all_reduce_perf",))
    smoke = SmokeWorkload("smoke", ("n1", "n2"), 8, ("python", "train.py"))
    for opts, said in ((OPTS, "srun --mpi=pmi2"), (commands.JobOptions("r1", "/x", mpi="none"), "srun --mpi=none"),
                       (commands.JobOptions("r1", "/x", launch="mpirun"), "mpirun")):  # fmt: skip
        for w in (nccl, smoke):
            assert commands.launch_of(opts, w) == said
            launch_line = commands.plan(opts, w, {}).script.splitlines()[-4]
            assert launch_line.startswith(said.split()[0] + " ")
            assert said.split()[-1] in launch_line.split()
    dcgm = DcgmWorkload("dcgm-n1", "n1", 8, ("dcgmi", "diag", "-r", "1"))
    assert commands.launch_of(OPTS, dcgm) == "", "a one-node step has no launch to agree on"


def test_the_submit_line_makes_the_output_folder_and_feeds_the_script_on_stdin() -> None:
    job = commands.plan(OPTS, DcgmWorkload("d", "n1", 8, ("dcgmi", "diag")), {})
    line = commands.submit_command(job)
    assert line.startswith("mkdir -p /shared/ra/ra-20261202T1000-ab12 && sbatch --parsable ")
    assert line.endswith(f"<<'RA_SCRIPT_END'\n{job.script}RA_SCRIPT_END\n")
    assert [commands.job_id_of(t) for t in ("1234\n", "1234;cluster\n", "", "sbatch: error: x\n")] == [
        "1234", "1234", None, None,
    ]  # fmt: skip


def _node(line: str) -> tools.Node:
    [node] = tools.parse_nodes(line, "scontrol").nodes
    return node


def test_a_drained_node_says_its_reason_who_set_it_and_when() -> None:
    drained = _node("NodeName=gpu-07 State=IDLE+DRAIN Gres=gpu:h200:8 Partitions=gpu "
                    "Reason=xid 79 [ops@2026-12-01T10:00:00]")  # fmt: skip
    why = not_usable(drained, "gpu")
    assert why == node_reason(drained)
    assert why is not None
    assert "IDLE+DRAIN" in why
    assert "Reason=xid 79" in why
    assert "set by ops at 2026-12-01T10:00:00" in why
    idle = _node("NodeName=gpu-08 State=IDLE Gres=gpu:h200:8 Partitions=gpu")
    assert not_usable(idle, "gpu") is None
    assert not_usable(idle, "debug") == "not in partition debug (Slurm lists it in gpu)"
    down = _node("NodeName=gpu-09 State=DOWN+NOT_RESPONDING Gres=gpu:h200:8 Partitions=gpu Reason=Not responding "
                 "[slurm@2026-12-01T11:00:00]")  # fmt: skip
    assert "DOWN+NOT_RESPONDING: Reason=Not responding (set by slurm" in str(not_usable(down, None))


def test_simulated_slurm_faults_name_a_node_of_the_profile_and_the_rest_go_to_the_simulator() -> None:
    nodes = ("sim-node-01", "sim-node-02")
    faults = SimFaults.parse(["node-drain@sim-node-02", "gpu-xid@sim-node-01", "slurmd-down@sim-node-01"])
    assert faults.scheduler == (
        SchedulerFault("node-drain", "sim-node-02"),
        SchedulerFault("slurmd-down", "sim-node-01"),
    )
    assert [str(f) for f in faults.acceptance] == ["gpu-xid@sim-node-01:0"]
    with pytest.raises(UsageError, match=r"'node-drain@sim-node-09': unknown node 'sim-node-09'.*nodes: 2 nodes"):
        SimFaults(SimFaults.parse(["node-drain@sim-node-09"]).scheduler).check(nodes)
    with pytest.raises(UsageError, match=r"node-drain needs a node"):
        SimFaults.parse(["node-drain"])


def test_step_wrappers_give_ranks_only_to_tools_whose_ranks_meet() -> None:
    perf = step_wrapper("all_reduce_perf", "/tmp/sim x")
    smi = step_wrapper("nvidia-smi", "/tmp/sim x")
    assert 'export SIM_SSH_NODE="${SLURMD_NODENAME:-${SIM_SSH_NODE:-}}"' in smi
    assert "OMPI_COMM_WORLD_RANK" in perf
    assert "OMPI_COMM_WORLD_RANK" not in smi  # one nvidia-smi per task of an inventory step: no rendezvous
    assert perf.rstrip().endswith("exec '/tmp/sim x'/bin/all_reduce_perf \"$@\"")


def test_the_shipped_sim_slurm_profile_loads_with_its_slurm_section() -> None:
    profile = load_profile("sim-slurm", ROOT / "baselines")
    assert profile.backend == "slurm"
    assert profile.slurm is not None
    assert (profile.slurm.partition, profile.slurm.launch, profile.slurm.mpi) == ("sim", "srun", "pmi2")
    assert profile.sim is not None
    assert profile.provider["cluster_id"] == "sim-slurm-h200-0001"


def test_a_slurm_launch_the_backend_does_not_know_is_a_profile_error(tmp_path: Path) -> None:
    text = (ROOT / "baselines" / "sim-slurm" / "cluster.yaml").read_text().replace("launch: srun ", "launch: torchrun ")
    (tmp_path / "cluster.yaml").write_text(text)
    (tmp_path / "allowed_signers").write_text((ROOT / "baselines" / "sim-slurm" / "allowed_signers").read_text())
    with pytest.raises(ProfileError, match=r"launch"):
        load_profile_file(tmp_path / "cluster.yaml")


def test_a_run_s_lease_is_written_atomically_and_read_back_per_run() -> None:
    line = commands.lease_command("/shared/ra", "r1", 90)
    assert line == ("mkdir -p /shared/ra/r1 && echo $(( $(date +%s) + 90 )) > /shared/ra/r1/lease.tmp && "
                    "mv /shared/ra/r1/lease.tmp /shared/ra/r1/lease")  # fmt: skip
    assert commands.lease_command("/shared/ra", "r1", 90, renew=True).startswith("[ -d /shared/ra/r1 ] && echo ")
    assert "cat /shared/ra/r2/lease" in commands.leases_command("/shared/ra", ["r1", "r2"])
    assert commands.parse_leases("r1 1796221785\nr2 \nnow 1796221695\n") == (
        {"r1": 1796221785, "r2": None}, 1796221695,
    )  # fmt: skip


def test_without_the_packages_sim_slurm_stops_with_a_usage_error_saying_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from acceptance import clusters
    from acceptance.sim.slurm import daemons

    monkeypatch.setattr(daemons, "missing", lambda: ["slurmctld", "munge"])
    profile = load_profile("sim-slurm", ROOT / "baselines")
    with pytest.raises(UsageError, match=r"missing slurmctld, munge; install with: apt-get install -y"):
        clusters.open(profile, "ra-test")


def test_a_reservation_of_the_profile_is_asked_for_by_every_job() -> None:
    opts = commands.JobOptions(run_id="r1", run_dir="/x", partition="gpu", reservation="maint-inc1234")
    job = commands.plan(opts, DcgmWorkload("d", "n1", 8, ("dcgmi", "diag")), {})
    assert "--reservation=maint-inc1234" in job.argv
    assert commands.placement(opts) == ["--partition=gpu", "--reservation=maint-inc1234"]


def test_a_secret_reference_in_the_smoke_env_is_a_usage_error_not_dropped() -> None:
    ref = {"valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}
    w = SmokeWorkload("smoke", ("n1",), 8, ("python", "pretrain_gpt.py"), {"HF_TOKEN": ref, "A": "1"})
    with pytest.raises(UsageError, match=r"smoke env HF_TOKEN: a secret reference \(valueFrom\) needs a Kubernetes"):
        commands.plan(OPTS, w, {})


def test_the_preflight_names_what_the_cluster_runs_on_in_its_own_words() -> None:
    """A Slurm or SSH cluster is not called Kubernetes in the preflight's lines (it said 'Kubernetes slurm-wlm')."""
    from acceptance.judge.preflight import platform

    assert platform("v1.30.10-sim") == "Kubernetes v1.30.10-sim"
    assert platform("slurm-wlm 22.05.8") == "slurm-wlm 22.05.8"
    assert platform("none (bare metal over SSH)") == "none (bare metal over SSH)"
