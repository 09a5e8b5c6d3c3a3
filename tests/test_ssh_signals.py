"""Ctrl-C, SIGTERM and SIGKILL during a run over SSH: no process of the run is left on any host.

The hosts belong to the test (they outlive the run, as real machines do); processes are counted
with ``ps`` through the real OpenSSH client, by the run-id marker in their environment.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

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


def wait_for(hosts: SimulatedHosts, proc: subprocess.Popen[str], log: Path, what: str, count: int = 1) -> None:
    """Until `count` processes of a run whose command holds `what` run on the hosts."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()[-3000:]
        lines = {line for found in marked_processes(hosts).values() for line in found}
        if sum(what in line for line in lines) >= count:
            return
        time.sleep(0.3)
    raise AssertionError(f"no {what!r} process appeared: {log.read_text()[-2000:]}")


def nothing_left(hosts: SimulatedHosts) -> dict[str, list[str]]:
    return {node: [] for node in hosts.addresses}


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_dcgm_leaves_no_process_on_any_host(
    tmp_path: Path, dcgm_hosts: SimulatedHosts, sig: signal.Signals
) -> None:
    with running(tmp_path, dcgm_hosts, "-k", "dcgm") as (proc, log):
        wait_for(dcgm_hosts, proc, log, "dcgmi diag", count=4)
        assert any("nv-hostengine" in line for found in marked_processes(dcgm_hosts).values() for line in found)
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
        wait_for(nccl_hosts, proc, log, "orted", count=4)
        wait_for(nccl_hosts, proc, log, "all_reduce_perf")
        interrupt(proc, log, sig)
    assert marked_processes(nccl_hosts) == nothing_left(nccl_hosts)


def test_after_sigkill_acceptance_cleanup_keeps_the_live_lease_then_ends_what_the_run_left(
    tmp_path: Path, dcgm_hosts: SimulatedHosts
) -> None:
    with running(tmp_path, dcgm_hosts, "-k", "dcgm") as (proc, log):
        wait_for(dcgm_hosts, proc, log, "dcgmi diag", count=4)
    proc.wait(timeout=30)
    left = marked_processes(dcgm_hosts)
    assert sum(len(found) for found in left.values()) >= 4 * 4  # the same process table, seen from each host
    command = [sys.executable, "-m", "acceptance", "cleanup", "--cluster", "rack", "--baselines-dir",
               str(tmp_path / "baselines")]  # fmt: skip
    # killed less than a lease ago: as on Kubernetes, its processes count as a live run's and are kept
    kept = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert "0 object(s) deleted" in kept.stdout
    assert "of live runs kept: ra-" in kept.stdout
    assert "--include-live deletes them too" in kept.stdout
    assert sum(len(found) for found in marked_processes(dcgm_hosts).values()) > 0  # still running
    cleanup = subprocess.run([*command, "--include-live"], capture_output=True, text=True, timeout=180, check=False)
    assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
    assert "deleting sim-node-01: process " in cleanup.stdout
    assert "dcgmi diag -r 3 -j" in cleanup.stdout
    assert marked_processes(dcgm_hosts) == nothing_left(dcgm_hosts)
