"""The simulated training job with a fault that strikes mid-run, in the real wording of corpus-wave2."""

from __future__ import annotations

import re
import statistics
from datetime import timedelta

import pytest

from acceptance.cli import main
from acceptance.sim.model.faultspec import parse_fault
from acceptance.tools import kernel, nvsmi, torchlogs, trainlog
from tests.incident_logs import NIC_NODE, NIC_STEP, NODES, TORCHRUN, TRAIN, XID_GPU, XID_NODE, XID_STEP, runner

LOST = NODES.index(XID_NODE) * 8 + XID_GPU  # rank 35


@pytest.fixture(scope="module")
def xid_run():
    """The log exactly as the ranks print it (the shapes it may arrive in: tests/test_sim_pastes.py)."""
    plain = {"SIM_LOG_SHAPE": "prefix=none,month=11"}
    return runner(f"gpu-xid@{XID_NODE}:{XID_GPU}", at_step=XID_STEP).run(TORCHRUN, plain, NODES[0], [])


def test_xid_under_torchrun_hangs_in_the_all_reduce_until_the_watchdog_fires(xid_run) -> None:
    assert xid_run.exit_code == 1
    text = xid_run.stdout
    steps = trainlog.parse(text.splitlines(keepends=True), "xid").frame()["step"].tolist()
    assert steps[-1] == XID_STEP - 1, "no step completes once the GPU is lost"
    log = torchlogs.parse(text, "xid")
    cuda = [e for e in log.errors if e.kind == "cuda-error"]
    assert {e.rank for e in cuda} == {LOST}
    timeouts = [e for e in log.errors if e.kind == "watchdog-timeout" and e.time is not None]
    assert sorted({e.rank for e in timeouts}) == [r for r in range(128) if r != LOST]
    assert len(timeouts) == 2 * 127  # the :629 record and the process group's exception, as in the corpus
    assert {(e.op, e.timeout_ms) for e in timeouts} == {("ALLREDUCE", 600000)}
    assert all(600000 <= e.elapsed_ms < 601000 for e in timeouts)
    assert min(e.time for e in timeouts) - cuda[0].time > timedelta(seconds=599)
    # the real shapes of corpus-wave2: rank prefix, glog header with a 9-digit fraction, WorkNCCL(...) record
    line = next(ln for ln in text.splitlines() if "Watchdog caught collective operation timeout" in ln)
    assert re.match(
        r"^\[rank\d+\]:\[E\d{4} \d{2}:\d{2}:\d{2}\.\d{9} ProcessGroupNCCL\.cpp:629\] \[Rank \d+\] Watchdog "
        r"caught collective operation timeout: WorkNCCL\(SeqNum=\d+, OpType=ALLREDUCE, NumelIn=\d+, "
        r"NumelOut=\d+, Timeout\(ms\)=600000\) ran for \d+ milliseconds before timing out\.$",
        line,
    )
    roots = [f for f in log.failures if f.root_cause]
    assert len(roots) == 16
    assert len(log.failures) == 128
    first = min(roots, key=lambda f: (f.time, f.line))
    assert (first.rank, first.host, first.exitcode) == (LOST, XID_NODE, -6)
    assert {r.host for r in log.ranks if r.rank // 8 == 4} == {XID_NODE}


def test_xid_under_mpirun_is_aborted_by_mpirun_at_once() -> None:
    run = runner(f"gpu-xid@{XID_NODE}:{XID_GPU}", at_step=XID_STEP).run(
        ["mpirun", "-H", ",".join(f"{n}:8" for n in NODES), "python", *TRAIN], {}, NODES[0], []
    )
    assert run.exit_code == 134
    assert "Watchdog caught" not in run.stdout
    assert f"mpirun noticed that process rank {LOST} with PID" in run.stdout
    assert f"on node {XID_NODE} exited on signal 6 (Aborted)." in run.stdout


def test_nccl_debug_info_maps_every_rank_to_its_host() -> None:
    run = runner(f"gpu-xid@{XID_NODE}:{XID_GPU}", at_step=XID_STEP).run(TORCHRUN, {"NCCL_DEBUG": "INFO"}, NODES[0], [])
    log = torchlogs.parse(run.stdout, "info")
    info = {r.rank: r.host for r in log.ranks if r.source == "nccl-info"}
    assert len(info) == 128
    assert info[LOST] == XID_NODE
    assert log.world_size == 128
    assert log.nccl_versions == ("2.26.5",)


def test_degraded_nic_mid_run_slows_the_job_from_that_step() -> None:
    run = runner(f"nic-degraded@{NIC_NODE}:2", at_step=NIC_STEP).run(["python", *TRAIN], {}, NODES[0], [])
    assert run.exit_code == 0
    frame = trainlog.parse(run.stdout.splitlines(keepends=True), "nic").frame()
    before = frame[(frame.step > 50) & (frame.step < NIC_STEP)].step_time_s
    after = frame[frame.step >= NIC_STEP + 2].step_time_s
    ratio = statistics.median(after) / statistics.median(before)
    assert 1.12 < ratio < 1.19  # 0.75 + 0.25 / 0.62 = 1.153: a quarter of the step is exposed communication
    assert not torchlogs.parse(run.stdout).errors


def test_faults_without_at_step_behave_as_before() -> None:
    """A fault present from the start still kills the job at start-up, as it did."""
    run = runner(faults=(f"gpu-xid@{XID_NODE}:{XID_GPU}",)).run(["python", *TRAIN], {}, NODES[0], [])
    assert run.exit_code == 1
    assert "unhandled cuda error" in run.stdout
    assert "iteration" not in run.stdout


def test_the_xid_node_kernel_log_and_nvidia_smi() -> None:
    r = runner(f"gpu-xid@{XID_NODE}:{XID_GPU}", at_step=XID_STEP)
    dmesg = r.run(["dmesg"], {}, XID_NODE, [])
    log = kernel.parse(dmesg.stdout)
    bus = r.cluster.node(XID_NODE).gpus[XID_GPU].busid
    assert [(x.xid, x.pci) for x in log.xids] == [(79, bus)]
    assert log.uuids[bus] == r.cluster.node(XID_NODE).gpus[XID_GPU].uuid
    smi = r.run(["nvidia-smi", "-q"], {}, XID_NODE, [])
    assert smi.exit_code == 15
    assert nvsmi.parse(smi.stdout).unreachable == (
        f"Unable to determine the device handle for GPU0000:{bus.split(':')[1].upper()}:00.0: Unknown Error",
    )
    healthy = r.run(["nvidia-smi", "-q"], {}, "sim-node-01", [])
    report = nvsmi.parse(healthy.stdout)
    assert healthy.exit_code == 0
    assert len(report.gpus) == 8
    assert report.driver_version == "570.133.20"
    assert all(nvsmi.findings(g) == [] for g in report.gpus)
    assert kernel.parse(r.run(["dmesg"], {}, "sim-node-01", []).stdout).xids == ()


def test_ecc_and_throttle_faults_show_in_nvidia_smi() -> None:
    r = runner(faults=("ecc-dbe@sim-node-02:6", "gpu-throttle@sim-node-02:1"))
    report = nvsmi.parse(r.run(["nvidia-smi", "-q"], {}, "sim-node-02", []).stdout)
    found = {g.get("Minor Number"): nvsmi.findings(g) for g in report.gpus}
    assert found["6"] == [
        "1 uncorrectable DRAM ECC error(s) (volatile)",
        "1 uncorrectable DRAM ECC error(s) (aggregate)",
        "1 row(s) remapped for uncorrectable errors",
        "row remapping pending: reset the GPU to apply it",
    ]
    assert found["1"] == ["clock event active: HW Slowdown", "clock event active: HW Thermal Slowdown"]


def test_sim_run_incident_options(capsys) -> None:
    assert main(["sim", "run", "--incident", f"gpu-xid@{XID_NODE}:3", "--", "python", *TRAIN]) == 2
    assert "--incident needs --at-step N" in capsys.readouterr().err
    assert main(["sim", "run", "--at-step", "5", "--", "python", *TRAIN]) == 2
    assert "--at-step needs an --incident" in capsys.readouterr().err
    assert main(["sim", "run", "--incident", "gpu-xid@sim-node-05:3", "--at-step", "1", "--", "python", *TRAIN]) == 2
    assert "at_step must be a training step >= 2" in capsys.readouterr().err
    assert (
        main(
            [
                "sim",
                "run",
                "--incident",
                f"gpu-xid@{XID_NODE}:{XID_GPU}",
                "--at-step",
                "30",
                "--node",
                XID_NODE,
                "--",
                "dmesg",
            ]
        )
        == 0
    )
    assert "NVRM: Xid (PCI:" in capsys.readouterr().out


def test_at_step_is_a_parameter_of_the_faults_that_can_strike_mid_run() -> None:
    cluster = runner().cluster
    assert parse_fault("nic-degraded@sim-node-02", cluster, {"at_step": 10}).param("at_step") == 10
    with pytest.raises(Exception, match="unknown parameter"):
        parse_fault("ecc-dbe@sim-node-02", cluster, {"at_step": 10})
