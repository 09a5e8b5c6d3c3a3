"""The SSH backend against a real OpenSSH sshd on loopback (simulated hosts owned by the test)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from acceptance.clusters.base import DcgmWorkload, Leftover, NcclWorkload, NodeInfo, NodeWorkload, SmokeWorkload
from acceptance.clusters.ssh import SshCluster
from acceptance.errors import SshError, UsageError
from acceptance.judge.preflight import judge_leftovers
from acceptance.profile import load_profile_file
from acceptance.run_session import new_run_id
from acceptance.sim.ssh.hosts import SimulatedHosts
from acceptance.tools import dcgm, nccl, trainlog
from tests.ssh_support import NEEDS_SSHD, host_profile, marked_processes, served_hosts, ssh_command
from tests.suite_run import TEST_TIME_SCALE

pytestmark = [NEEDS_SSHD, pytest.mark.slow]

DCGM_EMBEDDED = ("bash", "-c", "nv-hostengine >/dev/null && exec dcgmi diag -r 3 -j")
TRAIN = ("python", "pretrain_gpt.py", "--train-iters", "60", "--log-interval", "1", "--save-interval", "200",
         "--eval-interval", "500", "--exit-interval", "60")  # fmt: skip


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimulatedHosts]:
    """4 hosts at the test pace: the simulated tools (dcgmi, all_reduce_perf, pretrain_gpt) are judged by their
    output, never by how long they ran; what must last (a deadline, a lease, a wait's progress) runs `sleep`."""
    with served_hosts(tmp_path_factory.mktemp("hosts"), nodes=4, time_scale=TEST_TIME_SCALE) as served:
        yield served


def lease_ended(janitor: SshCluster, run_id: str) -> list[Leftover]:
    """The leftovers of run `run_id` once its lease has run out: waited for until the lease's own end (what the
    hosts said it is), then asked again until no host holds it live."""
    deadline = time.monotonic() + 30
    while True:
        found = [o for o in janitor.leftovers() if o.run_id == run_id]
        until = [o.live_until for o in found if o.live_until is not None]
        if not until or time.monotonic() > deadline:
            return found
        time.sleep(min(5.0, max(0.2, (max(until) - datetime.now(UTC)).total_seconds() + 0.1)))


def cluster(base: Path, hosts: SimulatedHosts, run_id: str | None = None, **ssh: object) -> SshCluster:
    profile = load_profile_file(host_profile(base, hosts, **ssh) / "cluster.yaml")
    return SshCluster(profile, run_id or new_run_id(datetime.now(UTC)))


def nodes_of(base: Path, hosts: SimulatedHosts, **ssh: object) -> dict[str, NodeInfo]:
    """The inventory's nodes by name, read with a cluster opened and closed for it."""
    c = cluster(base, hosts, **ssh)
    try:
        return {n.name: n for n in c.inventory().nodes}
    finally:
        c.close()


def fingerprint(public_key: Path) -> str:
    """The SHA256 fingerprint as OpenSSH's own ssh-keygen prints it."""
    out = subprocess.run(["ssh-keygen", "-l", "-f", str(public_key)], capture_output=True, text=True, check=True)
    return out.stdout.split()[1]


def test_inventory_reads_each_host_through_nvidia_smi(tmp_path: Path, hosts: SimulatedHosts) -> None:
    c = cluster(tmp_path, hosts)
    try:
        inv = c.inventory()
    finally:
        c.close()
    assert inv.server_version == "none (bare metal over SSH)"
    assert [n.name for n in inv.nodes] == list(hosts.addresses)
    first = inv.nodes[0]
    assert first.ready
    assert first.allocatable_gpus == 8
    assert (first.gpu_product, first.driver_version, first.cuda_version) == ("NVIDIA H200", "570.133.20", "12.8")
    assert first.os_image == "Ubuntu 22.04.5 LTS"
    assert first.labels["recovery-acceptance/hostname"] == "sim-node-01"
    assert first.labels["recovery-acceptance/mpirun"].startswith("Open MPI ")
    host_key = fingerprint(hosts.folder / "ssh_host_ed25519_key.pub")
    assert first.labels["recovery-acceptance/host-key"] == f"ssh-ed25519 {host_key}"


def test_an_unknown_host_key_is_refused_with_its_fingerprint_and_how_to_accept_it(
    tmp_path: Path, hosts: SimulatedHosts
) -> None:
    known = tmp_path / "known_hosts"
    known.write_text("".join(line for line in hosts.known_hosts.read_text().splitlines(keepends=True)
                             if "127.0.0.42]" not in line))  # fmt: skip
    nodes = nodes_of(tmp_path, hosts, known_hosts=str(known))
    assert nodes["sim-node-01"].ready
    assert not nodes["sim-node-02"].ready
    said = nodes["sim-node-02"].conditions["Ready"]
    host_key = fingerprint(hosts.folder / "ssh_host_ed25519_key.pub")
    assert f"host key of [127.0.0.42]:{hosts.port} is not known" in said
    assert f"offers ssh-ed25519 {host_key}" in said
    assert f"`ssh-keyscan -t ed25519 -p {hosts.port} 127.0.0.42 >> {known}`" in said
    assert known.read_text().count("\n") == 3  # never added


def test_a_changed_host_key_is_refused_even_with_accept_new(tmp_path: Path, hosts: SimulatedHosts) -> None:
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    kind, blob = (tmp_path / "other.pub").read_text().split()[:2]
    lines = hosts.known_hosts.read_text().splitlines()
    known = tmp_path / "known_hosts"
    known.write_text("\n".join([f"[127.0.0.43]:{hosts.port} {kind} {blob}", *lines[:2], lines[3]]) + "\n")
    before = known.read_bytes()
    for accept_new in (False, True):
        profile = load_profile_file(host_profile(tmp_path, hosts, known_hosts=str(known)) / "cluster.yaml")
        c = SshCluster(profile, new_run_id(datetime.now(UTC)), accept_new=accept_new)
        try:
            said = {n.name: n.conditions["Ready"] for n in c.inventory().nodes}
        finally:
            c.close()
        assert (
            f"host key of sim-node-03 has CHANGED: [127.0.0.43]:{hosts.port} offers ssh-ed25519 " in said["sim-node-03"]
        )
        assert fingerprint(hosts.folder / "ssh_host_ed25519_key.pub") in said["sim-node-03"]
        assert f"lists ssh-ed25519 {fingerprint(tmp_path / 'other.pub')}" in said["sim-node-03"]
        assert f"ssh-keygen -R '[127.0.0.43]:{hosts.port}'" in said["sim-node-03"]
        assert said["sim-node-01"] == "True"
    assert known.read_bytes() == before


def test_accept_new_takes_an_unknown_key_and_says_it_was_not_verified(tmp_path: Path, hosts: SimulatedHosts) -> None:
    known = tmp_path / "known_hosts"
    known.write_text("")
    profile = load_profile_file(host_profile(tmp_path, hosts, known_hosts=str(known)) / "cluster.yaml")
    c = SshCluster(profile, new_run_id(datetime.now(UTC)), accept_new=True)
    try:
        assert all(n.ready for n in c.inventory().nodes)
        handles = c.submit([NodeWorkload("probe", "sim-node-01", ("hostname",), "nccl", deadline_s=30)])
        [result] = c.wait(handles, 30)
        assert "--ssh-insecure-accept-new" in " ".join(c.describe())
    finally:
        c.cleanup()
        c.close()
    assert result.ok
    assert result.output == "sim-node-01\n"
    assert result.manifests[0]["host_key"]["trusted_by"] == "accepted unverified (--ssh-insecure-accept-new)"
    assert known.read_text() == ""


def test_a_host_that_refuses_connections_is_named(tmp_path: Path) -> None:
    with served_hosts(tmp_path, nodes=3, faults=("node-down@sim-node-02",), first=50) as down:
        nodes = nodes_of(tmp_path, down)
    assert nodes["sim-node-01"].ready
    said = nodes["sim-node-02"].conditions["Ready"]
    assert (
        said == f"unreachable over SSH: cannot connect to {down.user}@127.0.0.52 port {down.port}: connection refused"
    )


def test_a_busy_gpu_is_named_with_its_process(tmp_path: Path) -> None:
    with served_hosts(tmp_path, nodes=2, faults=("gpu-busy@sim-node-02:3",), first=54) as busy:
        nodes = nodes_of(tmp_path, busy)
    assert nodes["sim-node-01"].ready
    assert not nodes["sim-node-02"].ready
    assert nodes["sim-node-02"].conditions["Ready"] == "GPU 3 busy: pid 48213 (python3, 71680 MiB) holds it"


def test_a_jump_host_and_the_ssh_config_reach_the_nodes(tmp_path: Path, hosts: SimulatedHosts) -> None:
    """Node aliases resolved by the ssh config (HostName, Port, User, IdentityFile), through a bastion."""
    config = tmp_path / "ssh_config"
    entry = "Host {}-alias\n  HostName {}\n  Port {}\n  User {}\n  IdentityFile {}\n"
    config.write_text(
        "".join(entry.format(n, a, hosts.port, hosts.user, hosts.key) for n, a in hosts.addresses.items())
    )
    folder = host_profile(tmp_path, hosts, config=str(config), jump="sim-node-01-alias")
    data = yaml.safe_load((folder / "cluster.yaml").read_text())
    data["ssh"]["hosts"] = {node: f"{node}-alias" for node in hosts.addresses}
    for key in ("port", "user", "key"):
        del data["ssh"][key]
    (folder / "cluster.yaml").write_text(yaml.safe_dump(data))
    c = SshCluster(load_profile_file(folder / "cluster.yaml"), new_run_id(datetime.now(UTC)))
    try:
        assert all(n.ready for n in c.inventory().nodes)
        [result] = c.wait(c.submit([NodeWorkload("probe", "sim-node-03", ("hostname",), "nccl")]), 30)
    finally:
        c.cleanup()
        c.close()
    assert result.output == "sim-node-03\n"
    assert result.manifests[0]["host"] == f"{hosts.user}@127.0.0.43 port {hosts.port}"
    assert result.manifests[0]["via"] == f"{hosts.user}@127.0.0.41 port {hosts.port}"


def test_dcgm_uses_a_running_host_engine_and_stops_only_the_one_it_started(
    tmp_path: Path, hosts: SimulatedHosts
) -> None:
    ssh_command(hosts, "sim-node-01", "nv-hostengine")
    c = cluster(tmp_path, hosts)
    try:
        work = [DcgmWorkload(f"dcgm-{n}", n, 8, DCGM_EMBEDDED, 60) for n in ("sim-node-01", "sim-node-02")]
        results = c.wait(c.submit(work), 60)
        running = ssh_command(hosts, "sim-node-01", "ps -e -o args= | grep -c '^nv-hostengine' || true").strip()
    finally:
        c.cleanup()
        c.close()
        ssh_command(hosts, "sim-node-01", "nv-hostengine -t")
    assert [r.status for r in results] == ["succeeded", "succeeded"]
    assert [dcgm.parse(r.output).status for r in results] == ["pass", "pass"]
    assert "Started host engine" not in results[0].streams.get("sim-node-01.stderr", "")
    assert "Started host engine version 4.2.3" in results[1].streams["sim-node-02.stderr"]
    assert running == "1"  # the engine that was there before; the diagnostic's own one is gone


def test_nccl_tests_run_under_real_mpirun_from_the_head_node(tmp_path: Path, hosts: SimulatedHosts) -> None:
    c = cluster(tmp_path, hosts)
    nodes = tuple(hosts.addresses)
    argv = ("all_reduce_perf", "-b", "8", "-e", "1G", "-f", "2", "-g", "1")
    try:
        [result] = c.wait(c.submit([NcclWorkload("nccl-ar", nodes, 8, argv, {"NCCL_DEBUG": "WARN"}, 120)]), 120)
    finally:
        c.cleanup()
        c.close()
    assert result.ok, result.reason
    manifest = result.manifests[0]
    folder = manifest["folder"]
    assert manifest["files"]["hostfile"] == "".join(f"{n} slots=8\n" for n in nodes)
    assert manifest["script"].startswith(f"exec mpirun --allow-run-as-root -np 32 --hostfile {folder}/hostfile ")
    assert "-x NCCL_DEBUG -x NCCL_IB_HCA -x NCCL_SOCKET_IFNAME all_reduce_perf -b 8" in manifest["script"]
    run = nccl.parse_text(result.output).runs[0]
    assert {r.host for r in run.ranks} == set(nodes)
    placement = result.rank_placement({r.rank: r.host for r in run.ranks})
    assert placement[31].node == "sim-node-04"
    assert result.placement == {n: n for n in nodes}


def test_a_launcher_failure_is_said_in_the_launchers_words(tmp_path: Path) -> None:
    with served_hosts(tmp_path, nodes=3, faults=("node-down@sim-node-03",), first=57) as down:
        c = cluster(tmp_path, down)
        argv = ("all_reduce_perf", "-b", "8", "-e", "1M", "-f", "2", "-g", "1")
        try:
            [result] = c.wait(c.submit([NcclWorkload("nccl-down", tuple(down.addresses), 8, argv, {}, 60)]), 90)
        finally:
            c.cleanup()
            c.close()
    assert result.status == "failed"
    assert result.reason.startswith("mpirun on sim-node-01 exited ")
    assert (
        "ORTE was unable to reliably start one or more daemons (ssh: connect to host 127.0.0.60 port" in result.reason
    )
    assert "Connection refused" in result.reason


def test_a_workload_past_its_deadline_is_ended_on_its_host(tmp_path: Path, hosts: SimulatedHosts) -> None:
    c = cluster(tmp_path, hosts)
    try:
        handles = c.submit([NodeWorkload("sleepy", "sim-node-02", ("sleep", "300"), "nccl", deadline_s=1)])
        time.sleep(0.5)
        assert marked_processes(hosts, c.run_id)["sim-node-02"]
        [result] = c.wait(handles, 1)  # the wait ends it, the workload's 1 s being long past by then
        left = marked_processes(hosts, c.run_id)
    finally:
        c.cleanup()
        c.close()
    assert result.status == "timeout"
    assert "its processes were ended" in result.reason
    assert left == {n: [] for n in hosts.addresses}


def test_the_smoke_job_per_node_gets_torchrun_variables_and_rank_zeros_log(
    tmp_path: Path, hosts: SimulatedHosts
) -> None:
    c = cluster(tmp_path, hosts)
    nodes = ("sim-node-01", "sim-node-02")
    try:
        [result] = c.wait(c.submit([SmokeWorkload("train", nodes, 8, TRAIN, {}, 120)]), 120)
    finally:
        c.cleanup()
        c.close()
    assert result.ok, result.reason
    assert [m["env"]["NODE_RANK"] for m in result.manifests] == ["0", "1"]
    assert {m["env"]["MASTER_ADDR"] for m in result.manifests} == {"127.0.0.41"}
    assert result.manifests[0]["env"]["NNODES"] == "2"
    log = trainlog.parse(result.output.splitlines(keepends=True), source="smoke")
    assert len(log.steps) == 60


def test_a_live_runs_processes_are_spared_until_its_lease_runs_out_then_removed(
    tmp_path: Path, hosts: SimulatedHosts
) -> None:
    crashed = cluster(tmp_path / "crashed", hosts, run_id="ra-20261201000000-dead", lease="3s")
    crashed.submit([NodeWorkload("stuck", "sim-node-04", ("sleep", "300"), "nccl", deadline_s=600)])
    crashed.close()  # no cleanup, no more renewals: as after a SIGKILL
    janitor = cluster(tmp_path, hosts)
    try:
        live = janitor.leftovers()
        assert live
        assert all(o.run_id == "ra-20261201000000-dead" and o.live_until is not None for o in live)
        shown = [str(o) for o in live]
        assert any(
            s.startswith("sim-node-04: process ") and "sleep 300" in s and "live, lease until" in s for s in shown
        )
        said = judge_leftovers(live).summary  # the preflight's words, as on Kubernetes
        assert said.startswith("leftovers: another run is using this cluster now: ra-20261201000000-dead (lease until")
        assert janitor.remove_leftovers(older_than_s=None) == []  # another run's, live: kept
        assert sum(map(len, marked_processes(hosts).values())) > 0
        assert len(janitor.remove_leftovers(older_than_s=None, dry_run=True, include_live=True)) == len(live)
        ended = lease_ended(janitor, "ra-20261201000000-dead")  # no renewal: the lease runs out
        assert ended
        assert all(o.live_until is None for o in ended)
        assert f"sim-node-04: folder {hosts.run_dir}/ra-20261201000000-dead" in " ".join(map(str, ended))
        assert "(run ra-20261201000000-dead, run ended)" in str(ended[0])
        assert judge_leftovers(ended).summary.startswith(f"leftovers: {len(ended)} objects of earlier runs remain (")
        assert janitor.remove_leftovers(older_than_s=10 * 365 * 86400) == []
        removed = janitor.remove_leftovers(older_than_s=3600)
    finally:
        janitor.close()
    assert any("sleep 300" in str(r) for r in removed)
    assert marked_processes(hosts) == {n: [] for n in hosts.addresses}
    assert "ra-20261201000000-dead" not in ssh_command(hosts, "sim-node-04", f"ls {hosts.run_dir} || true")


def test_cleanup_names_a_host_it_could_not_ask_never_nothing_left(tmp_path: Path, hosts: SimulatedHosts) -> None:
    path = host_profile(tmp_path, hosts) / "cluster.yaml"
    data = yaml.safe_load(path.read_text())
    data["ssh"]["hosts"]["sim-node-04"] = "127.0.0.250"  # nothing listens there
    path.write_text(yaml.safe_dump(data))
    c = SshCluster(load_profile_file(path), new_run_id(datetime.now(UTC)))
    try:
        with pytest.raises(SshError, match=r"on the hosts that answered; NOT checked: sim-node-04 \(cannot connect"):
            c.remove_leftovers(older_than_s=None, dry_run=True)
    finally:
        c.close()


def test_a_running_run_renews_its_lease_on_the_hosts_it_uses(tmp_path: Path, hosts: SimulatedHosts) -> None:
    run = cluster(tmp_path / "run", hosts, lease="3s")
    janitor = cluster(tmp_path, hosts)
    try:
        run.submit([NodeWorkload("long", "sim-node-03", ("sleep", "60"), "nccl", deadline_s=120)])
        time.sleep(3.5)  # past the first lease (written before submit returned, to the host's whole second + 3 s)
        seen = janitor.leftovers()
        assert seen
        assert all(o.run_id == run.run_id and o.live_until is not None for o in seen)
    finally:
        run.cleanup()
        run.close()
        janitor.close()
    assert marked_processes(hosts, run.run_id) == {n: [] for n in hosts.addresses}


def test_what_only_kubernetes_has_is_a_usage_error_over_ssh(tmp_path: Path, hosts: SimulatedHosts) -> None:
    c = cluster(tmp_path, hosts)
    try:
        with pytest.raises(UsageError, match="exist only on Kubernetes"):
            c.job_logs("app=train")
        with pytest.raises(UsageError, match="secret reference"):
            c.submit([SmokeWorkload("s", ("sim-node-01",), 8, TRAIN, {"TOKEN": {"valueFrom": {"secretKeyRef": {}}}})])
    finally:
        c.close()


def test_node_signals_say_what_the_hosts_say_now_and_their_kernel_xid_lines(tmp_path: Path) -> None:
    with served_hosts(tmp_path, nodes=2, faults=["gpu-xid@sim-node-02:3"], first=90) as bad:
        c = cluster(tmp_path, bad)
        try:
            events = c.node_signals(["sim-node-01", "sim-node-02"], datetime(2020, 1, 1, tzinfo=UTC))
        finally:
            c.close()
    by_node = {e.object: [x for x in events if x.object == e.object] for e in events}
    assert "Node/sim-node-01" not in by_node  # healthy: nothing said
    said = [f"{e.reason}: {e.message}" for e in by_node["Node/sim-node-02"]]
    assert any(s.startswith("NVRM: [") and "NVRM: Xid (PCI:" in s and "): 79, " in s for s in said), said
    assert all(e.type == "Warning" for e in by_node["Node/sim-node-02"])
    coverage = [e.message for e in events if e.reason == "Coverage"]
    assert coverage
    assert "no node history" in coverage[0]


def test_a_key_held_by_the_ssh_agent_is_used_when_the_profile_names_none(
    tmp_path: Path, hosts: SimulatedHosts, monkeypatch: pytest.MonkeyPatch
) -> None:
    sock = tmp_path / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        env = {"SSH_AUTH_SOCK": str(sock), "PATH": "/usr/bin:/bin"}
        subprocess.run(["ssh-add", "-q", str(hosts.key)], env=env, check=True, capture_output=True, timeout=30)
        monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
        monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.ssh/id_* to fall back on
        folder = host_profile(tmp_path, hosts)
        data = yaml.safe_load((folder / "cluster.yaml").read_text())
        del data["ssh"]["key"]
        (folder / "cluster.yaml").write_text(yaml.safe_dump(data))
        c = SshCluster(load_profile_file(folder / "cluster.yaml"), new_run_id(datetime.now(UTC)))
        try:
            assert all(n.ready for n in c.inventory().nodes)
        finally:
            c.close()
    finally:
        agent.terminate()
        agent.wait(timeout=10)


def test_the_wait_tells_the_progress_sink_where_each_workload_is(tmp_path: Path, hosts: SimulatedHosts) -> None:
    seen: list[list[tuple[str, str, str, str | None]]] = []
    c = cluster(tmp_path, hosts)
    try:
        work = [NodeWorkload("short", "sim-node-01", ("true",), "nccl", deadline_s=30),
                NodeWorkload("longer", "sim-node-02", ("sleep", "2.5"), "nccl", deadline_s=30)]  # fmt: skip
        handles = c.submit(work)
        c.wait(handles, 30, progress=lambda ps: seen.append([(p.name, p.phase, p.nodes[0], p.status) for p in ps]))
    finally:
        c.cleanup()
        c.close()
    assert len(seen) >= 3, "about every second while waiting, and once at the end"
    assert ("longer", "running", "sim-node-02", None) in seen[0]
    assert seen[-1] == [("short", "done", "sim-node-01", "succeeded"), ("longer", "done", "sim-node-02", "succeeded")]
    assert any(("short", "done", "sim-node-01", None) in s and ("longer", "running", "sim-node-02", None) in s
               for s in seen[:-1]), "a workload that ended is done while another still runs"  # fmt: skip


def test_a_command_s_whole_output_is_read_even_when_its_exit_status_arrives_first(
    tmp_path: Path, hosts: SimulatedHosts
) -> None:
    """sshd may send the exit status before the last of the output: the read ends at the channel's EOF."""
    c = cluster(tmp_path, hosts)
    lines = 4000
    command = f"seq 1 {lines} | sed 's/^/iteration /'; echo end-of-stderr >&2"
    try:
        conn = c.hostset.connections[next(iter(hosts.addresses))]
        results = [conn.run(command, 30) for _ in range(40)]
    finally:
        c.close()
    cut = [r for r in results if len(r.stdout.splitlines()) != lines or r.stderr != "end-of-stderr\n"]
    assert not cut, f"{len(cut)} of {len(results)} reads were cut short: {cut[0].stdout[-80:]!r}"
    assert all(r.exit_code == 0 for r in results)
