"""`acceptance bundle` on SSH hosts: the affected host's own kernel Xid lines and ``nvidia-smi -q``, read over SSH.

The hosts are simulated behind a real sshd (the node with the fallen-off GPU prints it in its
``dmesg`` and ``nvidia-smi -q``); the job's log is the simulator's torchrun log of the same incident.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from acceptance.cli import main
from acceptance.sim.ssh.hosts import SimulatedHosts
from tests.incident_logs import XID_GPU, XID_NODE, write
from tests.ssh_support import NEEDS_SSHD, host_profile, served_hosts

pytestmark = [NEEDS_SSHD, pytest.mark.slow]


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimulatedHosts]:
    folder = tmp_path_factory.mktemp("bundle-hosts")
    with served_hosts(folder, nodes=16, faults=[f"gpu-xid@{XID_NODE}:{XID_GPU}"], first=100) as served:
        yield served


def test_the_affected_hosts_kernel_xids_and_nvidia_smi_q_are_read_over_ssh(
    tmp_path: Path, hosts: SimulatedHosts
) -> None:
    baselines = host_profile(tmp_path, hosts).parent
    log = write(tmp_path, only=("xid",))["xid"]
    out = tmp_path / "bundle"
    status = main(["bundle", "--cluster", "rack", "--baselines-dir", str(baselines), "--reports-dir",
                   str(tmp_path / "reports"), "--out", str(out), "--job-logs", str(log), "--no-sign"])  # fmt: skip
    assert status == 0
    doc = json.loads((out / "bundle.json").read_text())
    assert [a["node"] for a in doc["cluster"]["affected"]] == [XID_NODE]
    [node] = doc["node_evidence"]
    assert node["node"] == XID_NODE
    assert [x["xid"] for x in node["xids"]] == [79]
    assert any("Unable to determine the device handle" in line for line in node["nvidia_smi"])
    text = json.dumps(doc)
    assert f"ssh://{XID_NODE}/dmesg" in text
    assert f"ssh://{XID_NODE}/nvidia-smi-q" in text


def test_a_job_by_label_is_refused_over_ssh(
    tmp_path: Path, hosts: SimulatedHosts, capsys: pytest.CaptureFixture[str]
) -> None:
    baselines = host_profile(tmp_path, hosts).parent
    status = main(["bundle", "--cluster", "rack", "--baselines-dir", str(baselines), "--job", "app=gpt", "--no-sign",
                   "--out", str(tmp_path / "b")])  # fmt: skip
    assert status == 2
    assert "exist only on Kubernetes" in capsys.readouterr().err
