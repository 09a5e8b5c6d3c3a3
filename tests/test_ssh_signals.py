"""Ctrl-C, SIGTERM and SIGKILL during a run over SSH: no process of the run is left on any host.

The hosts belong to the test (they outlive the run, as real machines do); processes are counted
with ``ps`` through the real OpenSSH client, by the run-id marker in their environment.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from acceptance.cli import main
from acceptance.sim.ssh.hosts import SimulatedHosts
from tests.ssh_support import NEEDS_SSHD, host_profile, marked_processes, pytest_argv, served_hosts

pytestmark = [NEEDS_SSHD, pytest.mark.slow]


@pytest.fixture(scope="module")
def dcgm_hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimulatedHosts]:
    """4 hosts where DCGM r3 lasts 45 s."""
    with served_hosts(tmp_path_factory.mktemp("dcgm-hosts"), nodes=4, time_scale=0.05, first=70) as hosts:
        yield hosts


@pytest.fixture(scope="module")
def nccl_hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimulatedHosts]:
    """4 hosts where an all_reduce_perf run lasts its simulated seconds in full."""
    with served_hosts(tmp_path_factory.mktemp("nccl-hosts"), nodes=4, time_scale=1.0, first=75) as hosts:
        yield hosts


def start(base: Path, hosts: SimulatedHosts, *args: str) -> tuple[subprocess.Popen[str], Path]:
    baselines = host_profile(base, hosts).parent
    log = base / "run.log"
    with log.open("w") as out:
        proc = subprocess.Popen(pytest_argv(baselines, "rack", base / "report", "--record-baseline", *args),
                                stdout=out, stderr=subprocess.STDOUT, text=True, cwd=base)  # fmt: skip
    return proc, log


@contextmanager
def running(base: Path, hosts: SimulatedHosts, *args: str) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """`start`, and the run killed at the end whatever happened (a test that fails leaves no run behind)."""
    proc, log = start(base, hosts, *args)
    try:
        yield proc, log
    finally:
        proc.kill()


def interrupt(proc: subprocess.Popen[str], log: Path, sig: signal.Signals) -> None:
    """Send `sig`; the run must end as interrupted (exit 2) within 90 s."""
    proc.send_signal(sig)
    assert proc.wait(timeout=90) == 2, log.read_text()[-3000:]


def wait_for(hosts: SimulatedHosts, proc: subprocess.Popen[str], log: Path, wanted: dict[str, int]) -> set[str]:
    """Until, for each `what: count` of `wanted`, `count` processes of a run whose command holds `what` run on the
    hosts at once; the ``ps`` lines of the run's processes then (one look at the hosts judges them all)."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()[-3000:]
        lines = {line for found in marked_processes(hosts).values() for line in found}
        if all(sum(what in line for line in lines) >= count for what, count in wanted.items()):
            return lines
        time.sleep(0.3)
    raise AssertionError(f"not all of {wanted} appeared: {log.read_text()[-2000:]}")


def nothing_left(hosts: SimulatedHosts) -> dict[str, list[str]]:
    return {node: [] for node in hosts.addresses}


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_dcgm_leaves_no_process_on_any_host(
    tmp_path: Path, dcgm_hosts: SimulatedHosts, sig: signal.Signals
) -> None:
    with running(tmp_path, dcgm_hosts, "-k", "dcgm") as (proc, log):
        seen = wait_for(dcgm_hosts, proc, log, {"dcgmi diag": 4})
        assert any("nv-hostengine" in line for line in seen)  # beside the diagnostics it serves
        interrupt(proc, log, sig)
    # the plugin's handling, as on Kubernetes: the report is marked INTERRUPTED by the signal
    assert f"KeyboardInterrupt: {sig.name}" in log.read_text()
    assert f'name="interrupted" value="{sig.name}"' in (tmp_path / "report" / "junit.xml").read_text()
    assert marked_processes(dcgm_hosts) == nothing_left(dcgm_hosts)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_nccl_tests_leaves_no_process_on_any_host(
    tmp_path: Path, nccl_hosts: SimulatedHosts, sig: signal.Signals
) -> None:
    with running(tmp_path, nccl_hosts, "-k", "nccl_busbw") as (proc, log):
        wait_for(nccl_hosts, proc, log, {"orted": 4, "all_reduce_perf": 1})
        interrupt(proc, log, sig)
    assert marked_processes(nccl_hosts) == nothing_left(nccl_hosts)


def cleanup(capsys: pytest.CaptureFixture[str], base: Path, *extra: str) -> tuple[int, str]:
    """`acceptance cleanup --cluster rack` on the run's profile: its exit status and what it printed (in this
    process: the command's own `main`, without a second interpreter's imports)."""
    capsys.readouterr()
    status = main(["cleanup", "--cluster", "rack", "--baselines-dir", str(base / "baselines"), *extra])
    return status, capsys.readouterr().out


def test_after_sigkill_acceptance_cleanup_keeps_the_live_lease_then_ends_what_the_run_left(
    tmp_path: Path, dcgm_hosts: SimulatedHosts, capsys: pytest.CaptureFixture[str]
) -> None:
    with running(tmp_path, dcgm_hosts, "-k", "dcgm") as (proc, log):
        wait_for(dcgm_hosts, proc, log, {"dcgmi diag": 4})
    proc.wait(timeout=30)
    left = marked_processes(dcgm_hosts)
    assert sum(len(found) for found in left.values()) >= 4 * 4  # the same process table, seen from each host
    # killed less than a lease ago: as on Kubernetes, its processes count as a live run's and are kept
    status, kept = cleanup(capsys, tmp_path)
    assert status == 0, kept
    assert "0 object(s) deleted" in kept
    assert "of live runs kept: ra-" in kept
    assert "--include-live deletes them too" in kept
    assert sum(len(found) for found in marked_processes(dcgm_hosts).values()) > 0  # still running
    status, ended = cleanup(capsys, tmp_path, "--include-live")
    assert status == 0, ended
    assert "deleting sim-node-01: process " in ended
    assert "dcgmi diag -r 3 -j" in ended
    assert marked_processes(dcgm_hosts) == nothing_left(dcgm_hosts)
