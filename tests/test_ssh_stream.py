"""The SSH backend's optional `StreamsLogs`: the head node's stdout as the job prints it, and a stop
that ends the job's processes on every host, its log up to then kept (issue 28)."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from acceptance.clusters.base import SmokeWorkload, StreamsLogs
from acceptance.sim.ssh.hosts import SimulatedHosts
from tests.ssh_support import NEEDS_SSHD, marked_processes, served_hosts
from tests.test_ssh_backend import cluster

pytestmark = [pytest.mark.slow, NEEDS_SSHD]

TRAIN = ("python", "pretrain_gpt.py", "--train-iters", "1200", "--log-interval", "1", "--load", "/ckpt",
         "--ckpt-step", "1000", "--exit-interval", "1200")  # fmt: skip
ITERATION = re.compile(r"iteration\s+\d+/")


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimulatedHosts]:
    # 200 steps of ~1.2 s and a ~40 s start: ~280 simulated seconds, ~8 s of wall time
    with served_hosts(tmp_path_factory.mktemp("hosts"), nodes=2, time_scale=0.03, first=150) as served:
        yield served


def test_a_followed_smoke_job_is_stopped_on_every_host_with_its_log_kept(tmp_path: Path, hosts: SimulatedHosts) -> None:
    c = cluster(tmp_path, hosts)
    chunks: list[str] = []
    try:
        assert isinstance(c, StreamsLogs)
        [handle] = c.submit([SmokeWorkload("train-smoke", ("sim-node-01", "sim-node-02"), 8, TRAIN, {}, 120)])

        def follow() -> None:
            for chunk in c.follow(handle, 60):
                chunks.append(chunk)
                if len(ITERATION.findall("".join(chunks))) >= 30:
                    c.stop(handle, "decided PASS after 30 of at most 200 steps")
                    return

        thread = threading.Thread(target=follow)
        thread.start()
        [result] = c.wait([handle], 60)
        thread.join(30)
        left = marked_processes(hosts, c.run_id)
    finally:
        c.cleanup()
        c.close()
    assert len(chunks) > 1, "the log arrived as the job printed it"
    assert result.ok, result.reason
    assert result.exit_code is None
    assert result.stopped == "decided PASS after 30 of at most 200 steps"
    steps = len(ITERATION.findall(result.output))
    assert 30 <= steps < 200, steps
    assert left == {n: [] for n in hosts.addresses}, "no process of the stopped job is left on any host"
