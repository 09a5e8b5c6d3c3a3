"""`acceptance init --hosts`: an SSH profile drafted from the hosts themselves (a real sshd on loopback)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from acceptance.cli import main
from acceptance.profile import load_profile_file
from acceptance.sim.ssh.hosts import SimulatedHosts
from tests.ssh_support import NEEDS_SSHD, served_hosts

pytestmark = NEEDS_SSHD


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimulatedHosts]:
    with served_hosts(tmp_path_factory.mktemp("init-hosts"), nodes=3, first=110) as served:
        yield served


def _init(hosts: SimulatedHosts, base: Path, listing: str, *extra: str) -> int:
    return main(["init", "rack", "--hosts", listing, "--port", str(hosts.port), "--user", hosts.user,
                 "--key", str(hosts.key), "--known-hosts", str(hosts.known_hosts), "--baselines-dir", str(base),
                 *extra])  # fmt: skip


def test_the_profile_holds_what_the_hosts_say_and_passes_the_check(
    hosts: SimulatedHosts, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    listing = ",".join(f"{node}={address}" for node, address in hosts.addresses.items())
    assert _init(hosts, tmp_path, listing) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "3 nodes x 8 GPUs; profile check passed" in out
    assert "note:" not in out, "the simulated hosts have GPUs, DCGM and Open MPI"
    profile = load_profile_file(tmp_path / "rack" / "cluster.yaml")
    assert profile.backend == "ssh"
    assert profile.nodes == ("sim-node-01", "sim-node-02", "sim-node-03")
    assert (profile.gpus_per_node, profile.gpu_product) == (8, "NVIDIA H200")
    assert profile.ssh is not None
    assert dict(profile.ssh.hosts) == dict(hosts.addresses)
    assert (profile.ssh.user, profile.ssh.port, profile.ssh.head_node) == (hosts.user, hosts.port, "sim-node-01")
    assert (profile.ssh.key, profile.ssh.known_hosts) == (hosts.key, hosts.known_hosts)
    assert profile.test_names[0] == "all_reduce_perf"
    text = (tmp_path / "rack" / "cluster.yaml").read_text()
    assert "  # driver 570.133.20, CUDA 12.8 today" in text, "today's versions are said; the baseline records them"
    assert "from 3 of 3 hosts over SSH" in text


def test_a_hosts_file_names_the_hosts_and_never_overwrites(
    hosts: SimulatedHosts, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    listing = tmp_path / "hosts.txt"
    listing.write_text("# rack 7\n" + "".join(f"{a}   # {n}\n" for n, a in hosts.addresses.items()) + "\n")
    assert _init(hosts, tmp_path, str(listing)) == 0, capsys.readouterr().err
    profile = load_profile_file(tmp_path / "rack" / "cluster.yaml")
    assert profile.nodes == tuple(hosts.addresses.values()), "an address alone is its node's name"
    before = (tmp_path / "rack" / "cluster.yaml").read_text()
    assert _init(hosts, tmp_path, str(listing)) == 2
    assert "never overwrites" in capsys.readouterr().err
    assert (tmp_path / "rack" / "cluster.yaml").read_text() == before


def test_an_unknown_host_key_stops_the_draft_with_its_fingerprint(
    hosts: SimulatedHosts, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    listing = ",".join(f"{node}={address}" for node, address in hosts.addresses.items())
    assert _init(hosts, tmp_path / "b", listing, "--known-hosts", str(empty)) == 2
    err = capsys.readouterr().err
    assert "host keys not accepted, so no profile was written" in err
    assert err.count("SHA256:") >= 3, "every host's key is named by its fingerprint"
    assert "ssh-keyscan" in err
    assert not (tmp_path / "b").exists()
    assert empty.read_text() == "", "a host key is never added"


@pytest.mark.heavy  # waits out the SSH connect timeout of the host that is down
def test_a_host_that_does_not_answer_stays_with_a_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "hosts").mkdir()
    with served_hosts(tmp_path / "hosts", nodes=3, faults=["node-down@sim-node-03"], first=120) as down:
        listing = ",".join(f"{node}={address}" for node, address in down.addresses.items())
        assert _init(down, tmp_path, listing) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "note: did not answer (kept in the node set; preflight will fail until they do): sim-node-03" in out
    profile = load_profile_file(tmp_path / "rack" / "cluster.yaml")
    assert profile.nodes == ("sim-node-01", "sim-node-02", "sim-node-03")
    assert "from 2 of 3 hosts over SSH" in (tmp_path / "rack" / "cluster.yaml").read_text()


@pytest.mark.parametrize(
    ("listing", "message"),
    [("a b", "expected NAME=ADDRESS"), ("x=1.2.3.4,x=1.2.3.5", "'x' named twice"), (",,", "no host named")],
)
def test_a_bad_host_list_is_a_clear_error(
    listing: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", "rack", "--hosts", listing, "--baselines-dir", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "rack").exists()


def test_kubernetes_options_with_hosts_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "rack", "--hosts", "h1", "--context", "prod", "--baselines-dir", str(tmp_path)]) == 2
    assert "--context, --kubeconfig and --nodes are for Kubernetes" in capsys.readouterr().err
