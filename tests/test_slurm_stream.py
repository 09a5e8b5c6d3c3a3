"""Streaming on Slurm (`StreamsLogs`): a job's output file followed as it grows, and the job stopped by ``scancel``.

The file reading runs against a real file written by a real shell (no Slurm needed); the job's follow and
stop against a real slurmctld and slurmd on loopback (slow, skipped without the packages).
"""

from __future__ import annotations

import dataclasses
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from acceptance.clusters.base import Handle, SmokeWorkload, StreamsLogs
from acceptance.clusters.slurm.simulated import SimulatedSlurmCluster
from acceptance.clusters.slurm.stream import JobStreams, parse_poll, poll_command
from acceptance.clusters.slurm.transport import LocalTransport
from acceptance.profile import load_profile_file
from acceptance.sim.model.faultspec import SimFaults
from tests.slurm_support import NEEDS_SLURM, sim_slurm_profile
from tests.suite_process import runpytest


def _handle(output: Path, job_id: str = "17") -> Handle:
    workload = SmokeWorkload("smoke", ("n1",), 1, ("train",))
    return Handle(workload, (("slurm-job", job_id),), ({"job_id": job_id, "output": str(output)},), datetime.now(UTC))


def test_a_poll_reads_the_bytes_from_its_offset_and_says_whether_the_script_ended(tmp_path: Path) -> None:
    out = tmp_path / "job.out"
    out.write_bytes("héllo\nwörld\n".encode())
    shell = LocalTransport()
    first = parse_poll(shell.run(poll_command(str(out), 0), 10).stdout)
    assert (first.data.decode(), first.ended) == ("héllo\nwörld\n", False)
    (tmp_path / "job.out.rc").write_text("0\n")
    rest = parse_poll(shell.run(poll_command(str(out), len("héllo\n".encode())), 10).stdout)
    assert (rest.data.decode(), rest.ended) == ("wörld\n", True)
    with pytest.raises(ValueError, match="no @@ra-data@@ line"):
        parse_poll("scontrol: error\n")


def test_the_file_is_handed_out_in_complete_lines_as_it_grows_until_the_script_ends(tmp_path: Path) -> None:
    out = tmp_path / "job.out"
    writer = subprocess.Popen(["bash", "-c", f"for i in 1 2 3 4 5; do echo \"stép $i\" >> {out}; sleep 0.3; done; "
                               f"printf 'last, no newline' >> {out}; echo 0 > {out}.rc"])  # fmt: skip
    try:
        shell = LocalTransport()
        streams = JobStreams(shell.run, shell.where, poll_s=0.05)
        start = time.monotonic()
        got: list[tuple[float, str]] = [(time.monotonic() - start, c) for c in streams.follow(_handle(out), 30)]
    finally:
        writer.wait(timeout=30)
    text = "".join(c for _, c in got)
    assert text == "".join(f"stép {i}\n" for i in range(1, 6)) + "last, no newline"
    assert all(c.endswith("\n") for _, c in got[:-1]), "complete lines only, but for the file's last piece"
    assert got[0][0] < 1.0, "the first line is handed out while the job still writes"
    assert len(got) >= 3


def test_a_stopped_follow_ends_and_a_stopped_job_s_result_is_a_success_saying_why(tmp_path: Path) -> None:
    from acceptance.clusters.base import WorkloadResult

    out = tmp_path / "job.out"
    out.write_text("step 1\n")
    shell = LocalTransport(env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    (tmp_path / "scancel").write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/cancelled\n')
    (tmp_path / "scancel").chmod(0o755)
    streams = JobStreams(shell.run, shell.where, poll_s=0.05)
    handle = _handle(out)
    follow = streams.follow(handle, 30)
    assert next(follow) == "step 1\n"
    streams.stop(handle, "decided PASS after 60 steps")
    assert list(follow) == []
    assert (tmp_path / "cancelled").read_text().split() == ["--full", "17"]
    ended = WorkloadResult.not_run(handle.workload, "", datetime.now(UTC))
    failed = dataclasses.replace(ended, status="failed", reason="job 17 ended without its exit status")
    result = streams.stopped(handle, failed)
    assert (result.status, result.exit_code, result.stopped, result.ok) == (
        "succeeded", None, "decided PASS after 60 steps", True)  # fmt: skip
    timeout = dataclasses.replace(ended, status="timeout")
    assert streams.stopped(handle, timeout) is timeout, "a job past its deadline stays a timeout"


def test_a_scancel_that_fails_to_stop_the_job_says_the_command_and_its_output(tmp_path: Path) -> None:
    from acceptance.errors import ClusterError

    (tmp_path / "scancel").write_text("#!/bin/sh\necho 'scancel: error: Access denied' >&2\nexit 1\n")
    (tmp_path / "scancel").chmod(0o755)
    shell = LocalTransport(env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    with pytest.raises(ClusterError, match=r"stopping job 17: scancel failed on this machine: `scancel --full 17` "
                                           r"exited 1: scancel: error: Access denied"):  # fmt: skip
        JobStreams(shell.run, shell.where).stop(_handle(tmp_path / "job.out"), "decided")


# ---- against a real Slurm ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimulatedSlurmCluster]:
    base = tmp_path_factory.mktemp("slurm-stream")
    profile = load_profile_file(sim_slurm_profile(base, nodes=2) / "cluster.yaml")
    cluster = SimulatedSlurmCluster.start(profile, "ra-20261202T0000-stream", SimFaults())
    try:
        yield cluster
    finally:
        cluster.close()


def _printing(steps: int, pause: float, name: str = "smoke") -> SmokeWorkload:
    """A two-node job whose rank 0 prints a step line every `pause` seconds (the smoke job's launch: srun);
    each test names its own (the module's cluster is one run: a name's output file is the run's)."""
    script = f'[ "$SLURM_PROCID" = 0 ] || exit 0; for i in $(seq 1 {steps}); do echo "step $i"; sleep {pause}; done'
    return SmokeWorkload(name, ("sim-node-01", "sim-node-02"), 1, ("bash", "-c", script), deadline_s=300)


def _queue_of(cluster: SimulatedSlurmCluster) -> list[str]:
    answer = cluster.transport.run("squeue --noheader --all --format='%i %k'", 30)
    assert answer.ok, answer.said()
    return [line for line in answer.stdout.splitlines() if cluster.run_id in line]


@NEEDS_SLURM
@pytest.mark.slow
def test_a_running_job_is_followed_then_stopped_by_scancel_and_its_wait_keeps_what_it_printed(
    sim: SimulatedSlurmCluster,
) -> None:
    assert isinstance(sim, StreamsLogs)
    [handle] = sim.submit([_printing(600, 0.1)])
    seen = ""
    start = time.monotonic()
    for chunk in sim.follow(handle, 120):
        seen += chunk
        if "step 5\n" in seen:
            sim.stop(handle, "decided PASS after 5 steps")
            break
    [result] = sim.wait([handle], 120)
    assert time.monotonic() - start < 40, "stopped long before its 60 s of steps"
    assert (result.status, result.exit_code, result.stopped) == ("succeeded", None, "decided PASS after 5 steps")
    assert result.ok
    assert "step 5\n" in result.output
    assert "step 600" not in result.output
    assert _queue_of(sim) == []


@NEEDS_SLURM
@pytest.mark.slow
def test_a_job_that_ends_on_its_own_is_followed_to_its_last_line(sim: SimulatedSlurmCluster) -> None:
    [handle] = sim.submit([_printing(8, 0.2, "smoke-to-its-end")])
    text = "".join(sim.follow(handle, 120))
    [result] = sim.wait([handle], 120)
    assert text == "".join(f"step {i}\n" for i in range(1, 9))
    assert (result.status, result.exit_code, result.stopped) == ("succeeded", 0, "")
    assert result.output == text
    assert _queue_of(sim) == []


@NEEDS_SLURM
@pytest.mark.slow
def test_on_slurm_a_healthy_smoke_run_is_stopped_once_decided_and_its_report_verifies(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """Criterion 3's sequential rule on ``--cluster=sim-slurm``: the smoke job's output streams in, the job is
    ``scancel``ed once decided, and its log up to then is the evidence."""

    from acceptance.cli import main
    from tests.suite_run import ROOT, copy_agreement, demo_key
    from tests.test_smoke_stream_sim import assert_stopped_once_decided

    folder = pytester.path / "baselines" / "sim-slurm"
    folder.mkdir(parents=True)
    text = (ROOT / "baselines" / "sim-slurm" / "cluster.yaml").read_text()
    assert "\n  restore_step: 1000\n" in text
    assert "\n  time_scale: 0.002 " in text
    # five times slower than shipped (200 steps in about 15 s): a poll of the output file every half second
    # then stops the job long before its end even on a loaded machine; the verdict reads simulated times
    text = text.replace("\n  time_scale: 0.002 ", "\n  time_scale: 0.01 ")
    (folder / "cluster.yaml").write_text(
        text.replace("\n  restore_step: 1000\n", "\n  restore_step: 1000\n  sequential: {method: mixture}\n")
    )
    copy_agreement(folder, shipped_cluster="sim-slurm")
    key = demo_key(pytester.path)
    assert main(["baseline", "amend", "sim-slurm", "--margins-from-profile", "--reason", "sequential smoke (test)",
                 "--baselines-dir", str(folder.parent), "--sign-key", str(key)]) == 0  # fmt: skip
    report = pytester.path / "report"
    result = runpytest(
        pytester, str(ROOT / "acceptance"), "--cluster=sim-slurm", f"--baselines-dir={folder.parent}",
        f"--report-dir={report}", f"--sign-key={key}", "--allow-unsigned-baseline", "-p", "no:cacheprovider",
        "-k", "smoke or loss", timeout=300,
    )  # fmt: skip
    assert_stopped_once_decided(result, report, folder / "allowed_signers", capsys)
