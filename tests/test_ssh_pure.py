"""The pure parts of the SSH backend, by equality: hostfile and mpirun argv, ssh settings, plans, parsers, scripts."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import paramiko
import pytest

from acceptance.clusters.base import DcgmWorkload, NcclWorkload, NodeWorkload, SmokeWorkload
from acceptance.clusters.ssh import inventory, janitor, mpi, plans, remote
from acceptance.clusters.ssh.remote import Scan
from acceptance.clusters.ssh.settings import SshSettings
from acceptance.clusters.ssh.targets import Endpoint, HostTarget, resolve_targets, split_address
from acceptance.errors import UsageError
from tests.shared import SHARED, needs_shared

LAUNCHERS = SHARED / "corpus-wave2" / "launcher-mpirun-srun"


def test_hostfile_names_every_node_with_its_slots() -> None:
    assert mpi.hostfile(["gpu-01", "gpu-02"], 8) == "gpu-01 slots=8\ngpu-02 slots=8\n"


def test_mpirun_argv_for_open_mpi_4() -> None:
    argv = mpi.mpirun_argv(
        mpirun="mpirun", major=4, nprocs=16, hostfile_path="/r/w/hostfile", ssh_config_path="/r/w/ssh_config",
        run_id="ra-1", workload="nccl-a", env_names=["NCCL_DEBUG", "NCCL_IB_HCA"],
        extra_args=["--mca", "btl", "^openib"], argv=["all_reduce_perf", "-b", "8"],
    )  # fmt: skip
    assert argv == [
        "mpirun", "--allow-run-as-root", "-np", "16", "--hostfile", "/r/w/hostfile", "--bind-to", "none",
        "--mca", "plm_rsh_args", "-F /r/w/ssh_config", "--mca", "plm_rsh_no_tree_spawn", "1",
        "--mca", "orte_launch_agent", "env RECOVERY_ACCEPTANCE_RUN_ID=ra-1 RECOVERY_ACCEPTANCE_WORKLOAD=nccl-a orted",
        "-x", "NCCL_DEBUG", "-x", "NCCL_IB_HCA", "--mca", "btl", "^openib", "all_reduce_perf", "-b", "8",
    ]  # fmt: skip


def test_concurrent_mpiruns_on_the_head_node_each_get_their_own_session_directory() -> None:
    """Open MPI 4 races on `$TMPDIR/ompi.<host>.<uid>` when several mpiruns start at once on one node (a failed
    localization group read as a bad node); each workload's mpirun keeps its session under its own folder."""
    common = {"mpirun": "mpirun", "nprocs": 2, "hostfile_path": "h", "ssh_config_path": "c", "run_id": "r",
              "workload": "w", "env_names": [], "extra_args": [], "argv": ["x"],
              "session_dir": "/r/loc-r1-g03"}  # fmt: skip
    four = mpi.mpirun_argv(major=4, **common)  # type: ignore[arg-type]
    assert four[four.index("orte_local_tmpdir_base") + 1] == "/r/loc-r1-g03"
    assert four[four.index("orte_local_tmpdir_base") - 1] == "--mca"
    assert "orte_local_tmpdir_base" not in mpi.mpirun_argv(major=5, **common)  # type: ignore[arg-type]


def test_mpirun_argv_for_open_mpi_5_uses_prrte_names() -> None:
    argv = mpi.mpirun_argv(mpirun="/opt/ompi/bin/mpirun", major=5, nprocs=2, hostfile_path="h", ssh_config_path="c",
                           run_id="r", workload="w", env_names=[], extra_args=[], argv=["x"])  # fmt: skip
    assert argv == [
        "/opt/ompi/bin/mpirun", "--allow-run-as-root", "-np", "2", "--hostfile", "h", "--bind-to", "none",
        "--prtemca", "plm_ssh_args", "-F c", "--prtemca", "plm_ssh_no_tree_spawn", "1",
        "--prtemca", "prte_launch_agent", "env RECOVERY_ACCEPTANCE_RUN_ID=r RECOVERY_ACCEPTANCE_WORKLOAD=w prted", "x",
    ]  # fmt: skip


def test_the_launchers_ssh_config_is_strict_and_self_contained() -> None:
    hosts = [mpi.LauncherHost("gpu-01", "10.0.0.1", 22, "ops"), mpi.LauncherHost("gpu-02", "10.0.0.2", 2222, "ops")]
    text = mpi.ssh_config(hosts, "/r/known_hosts", accept_new=False, identity_file="/home/ops/.ssh/id_cluster",
                          connect_timeout_s=15)  # fmt: skip
    assert text == (
        "# written by recovery-acceptance for mpirun on the head node\n"
        "Host gpu-01\n  HostName 10.0.0.1\n  Port 22\n  User ops\n"
        "Host gpu-02\n  HostName 10.0.0.2\n  Port 2222\n  User ops\n"
        "Host *\n  UserKnownHostsFile /r/known_hosts\n  GlobalKnownHostsFile /dev/null\n"
        "  StrictHostKeyChecking yes\n  BatchMode yes\n  ConnectTimeout 15\n  ServerAliveInterval 15\n"
        "  LogLevel ERROR\n  IdentityFile /home/ops/.ssh/id_cluster\n  IdentitiesOnly yes\n"
    )
    assert "StrictHostKeyChecking accept-new" in mpi.ssh_config(hosts, "k", accept_new=True, identity_file=None,
                                                                 connect_timeout_s=5)  # fmt: skip
    assert mpi.known_hosts([("10.0.0.1", 22, "ssh-ed25519", "AAAA"), ("10.0.0.2", 2222, "ssh-rsa", "BBBB")]) == (
        "10.0.0.1 ssh-ed25519 AAAA\n[10.0.0.2]:2222 ssh-rsa BBBB\n"
    )


def test_mpirun_version_is_read_from_its_first_line() -> None:
    assert str(mpi.parse_mpirun_version("mpirun (Open MPI) 4.1.4\n\nReport bugs to ...")) == "Open MPI 4.1.4"
    assert mpi.parse_mpirun_version("prterun (PRRTE) 3.0.6\n") == mpi.MpiVersion("PRRTE", "3.0.6")
    found = mpi.parse_mpirun_version("mpirun (Open MPI) 5.0.7")
    assert found is not None
    assert found.major == 5
    assert mpi.parse_mpirun_version("sh: 1: mpirun: not found") is None


@needs_shared
def test_launcher_failures_are_said_in_the_launchers_words_from_real_logs() -> None:
    orte = (LAUNCHERS / "deepspeed-runner-mpirun-orte-unable-to-start-daemons-ssh-connection-refused.txt").read_text()
    assert mpi.launcher_reason("", orte, 1) == (
        "ORTE was unable to reliably start one or more daemons "
        "(ssh: connect to host algo-2 port 22: Connection refused)"
    )
    prte = LAUNCHERS / "prterun-ompi5-ofi-mtl-abort-signal6-backtrace-interleaved-remote-stderr-wrapped-notice.txt"
    assert mpi.launcher_reason(prte.read_text(), "", 134) == (
        "rank 1 (pid 820212) on node neutron-nvidia exited on signal 6 (Aborted)"
    )


def test_launcher_failures_made_by_open_mpi_4_here() -> None:
    assert mpi.launcher_reason("", "Host key verification failed.\r\n", 255) == "Host key verification failed."
    stderr = (
        "--------------------------------------------------------------------------\n"
        "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
        "the job to be terminated. The first process to do so was:\n\n"
        "  Process name: [[46187,1],0]\n  Exit code:    3\n"
        "--------------------------------------------------------------------------\n"
    )
    assert mpi.launcher_reason("", stderr, 3) == "rank 0 exited with code 3 and mpirun aborted the job"
    assert mpi.launcher_reason("all fine\n", "", 1) == ""


def test_addresses_take_an_optional_port() -> None:
    assert split_address("gpu-01") == ("gpu-01", None)
    assert split_address("10.0.0.7:2222") == ("10.0.0.7", 2222)
    assert split_address("[fe80::1]:22") == ("fe80::1", 22)
    assert split_address("fe80::1") == ("fe80::1", None)
    with pytest.raises(UsageError, match="expected HOST or HOST:PORT"):
        split_address("gpu:ssh")


def _settings(**kw: object) -> SshSettings:
    values: dict[str, object] = {"hosts": {"a": "a1", "b": "10.0.0.2:2200"}, "user": None, "port": None, "key": None,
                                 "known_hosts": None, "head_node": "a"}  # fmt: skip
    values.update(kw)
    return SshSettings(**values)  # type: ignore[arg-type]


def test_the_profile_wins_over_the_ssh_config_which_wins_over_defaults() -> None:
    config = paramiko.SSHConfig.from_text(
        "Host a1\n  HostName 192.168.1.1\n  Port 2022\n  User cfg\n  IdentityFile /keys/a\n  ProxyJump bastion\n"
        "Host bastion\n  HostName 203.0.113.9\n  User jumper\n"
    )
    found = resolve_targets(_settings(), ["a", "b"], config, "me")
    assert found == {
        "a": HostTarget("a", Endpoint("192.168.1.1", 2022, "cfg", ("/keys/a",)), Endpoint("203.0.113.9", 22, "jumper")),
        "b": HostTarget("b", Endpoint("10.0.0.2", 2200, "me", ()), None),
    }
    found = resolve_targets(_settings(user="ops", port=2300, key=Path("/k"), jump="j@10.9.9.9:99"), ["a", "b"],
                            config, "me")  # fmt: skip
    assert found["a"] == HostTarget("a", Endpoint("192.168.1.1", 2300, "ops", ("/k",)),
                                    Endpoint("10.9.9.9", 99, "j", ("/k",)))  # fmt: skip
    assert found["b"].endpoint == Endpoint("10.0.0.2", 2200, "ops", ("/k",))


def test_what_the_ssh_config_says_that_cannot_be_honoured_stops_the_run() -> None:
    proxy = paramiko.SSHConfig.from_text("Host a1\n  ProxyCommand nc %h %p\n")
    with pytest.raises(UsageError, match="ProxyCommand, which this harness cannot honour"):
        resolve_targets(_settings(), ["a"], proxy, "me")
    chain = paramiko.SSHConfig.from_text("Host a1\n  ProxyJump j1,j2\n")
    with pytest.raises(UsageError, match="a chain of jump hosts is not supported"):
        resolve_targets(_settings(), ["a"], chain, "me")


def _ctx(**kw: object) -> plans.PlanContext:
    endpoints = {f"n{i}": Endpoint(f"10.0.0.{i}", 22, "ops") for i in range(1, 4)}
    values: dict[str, object] = {"run_id": "ra-x", "run_dir": "/tmp/ra", "head": "n1", "endpoints": endpoints,
                                 "known_keys": {"n1": [("ssh-ed25519", "AAA1")], "n2": [("ssh-ed25519", "AAA2")]},
                                 "env": {"NCCL_SOCKET_IFNAME": "eth0"}}  # fmt: skip
    values.update(kw)
    return plans.PlanContext(**values)  # type: ignore[arg-type]


def test_an_nccl_workload_is_one_mpirun_on_the_head_node() -> None:
    w = NcclWorkload("nccl-ar", ("n1", "n2"), 8, ("all_reduce_perf", "-b", "8"), {"NCCL_DEBUG": "INFO"}, 600)
    [command] = plans.plan(_ctx(), w)
    folder = "/tmp/ra/ra-x/nccl-ar"
    assert (command.node, command.role, command.folder, command.mpi) == ("n1", "main", folder, True)
    assert command.env == {"NCCL_SOCKET_IFNAME": "eth0", "NCCL_DEBUG": "INFO"}
    assert command.deadline_s == 660
    assert command.files["hostfile"] == "n1 slots=8\nn2 slots=8\n"
    assert command.files["known_hosts"] == "10.0.0.1 ssh-ed25519 AAA1\n10.0.0.2 ssh-ed25519 AAA2\n"
    assert command.script == (
        f"exec mpirun --allow-run-as-root -np 16 --hostfile {folder}/hostfile --bind-to none --mca plm_rsh_args "
        f"'-F {folder}/ssh_config' --mca plm_rsh_no_tree_spawn 1 --mca orte_launch_agent "
        "'env RECOVERY_ACCEPTANCE_RUN_ID=ra-x RECOVERY_ACCEPTANCE_WORKLOAD=nccl-ar orted' "
        "--mca orte_local_tmpdir_base /tmp/ra/ra-x/nccl-ar -x NCCL_DEBUG "
        "-x NCCL_SOCKET_IFNAME all_reduce_perf -b 8\n"
    )
    assert plans.HostCommand.from_json(command.to_json()) == command


def test_dcgm_with_the_embedded_engine_uses_the_hosts_engine_or_starts_and_stops_its_own() -> None:
    embedded = ("bash", "-c", "nv-hostengine >/dev/null && exec dcgmi diag -r 3 -j")
    [command] = plans.plan(_ctx(), DcgmWorkload("dcgm-n2", "n2", 8, embedded, 3600))
    assert command.node == "n2"
    assert command.script == (
        "# the host's DCGM host engine when one answers; else one started for this diagnostic, stopped after it\n"
        "started=\nif ! dcgmi discovery -l >/dev/null 2>&1; then\n"
        '  nv-hostengine --pid "$PWD/nv-hostengine.pid" >&2 && started=1\nfi\n'
        "dcgmi diag -r 3 -j\nrc=$?\n"
        'if [ -n "$started" ] && [ -s nv-hostengine.pid ]; then kill "$(cat nv-hostengine.pid)" 2>/dev/null; fi\n'
        "exit $rc\n"
    )
    [remote_engine] = plans.plan(_ctx(), DcgmWorkload("dcgm-n3", "n3", 8, ("dcgmi", "diag", "--host", "h:5555"), 60))
    assert remote_engine.script == "exec dcgmi diag --host h:5555\n"


def test_the_smoke_job_runs_as_the_profile_says() -> None:
    w = SmokeWorkload("train", ("n1", "n2", "n3"), 8, ("python", "train.py"), {"SEED": "1"}, 100)
    [wrapped] = plans.plan(_ctx(), w)
    assert wrapped.mpi
    assert wrapped.script.endswith("-x NCCL_SOCKET_IFNAME -x SEED python train.py\n")
    [head] = plans.plan(_ctx(smoke_launch="head"), w)
    assert (head.node, head.script, head.env["RECOVERY_ACCEPTANCE_HOSTFILE"]) == (
        "n1",
        "exec python train.py\n",
        "/tmp/ra/ra-x/train/hostfile",
    )
    per_node = plans.plan(_ctx(smoke_launch="per-node", log_node_rank=2), w)
    assert [(c.node, c.role, c.env["NODE_RANK"]) for c in per_node] == [
        ("n3", "main", "2"), ("n1", "peer", "0"), ("n2", "peer", "1")
    ]  # fmt: skip
    assert per_node[0].env | {"SEED": "1"} == {
        "NCCL_SOCKET_IFNAME": "eth0", "SEED": "1", "NODE_RANK": "2", "NNODES": "3", "MASTER_ADDR": "10.0.0.1",
        "MASTER_PORT": "29500", "NPROC_PER_NODE": "8", "WORLD_SIZE": "24",
    }  # fmt: skip
    assert per_node[0].folder == "/tmp/ra/ra-x/train.n3"
    [one] = plans.plan(_ctx(), SmokeWorkload("train", ("n2",), 8, ("python", "train.py"), {}, 100))
    assert (one.node, one.mpi, one.script) == ("n2", False, "exec python train.py\n")


def test_a_site_check_runs_its_command_on_its_node() -> None:
    [command] = plans.plan(_ctx(), NodeWorkload("ib-n3", "n3", ("bash", "-c", "ib_write_bw -d mlx5_0"), "nccl"))
    assert (command.node, command.script) == ("n3", "exec bash -c 'ib_write_bw -d mlx5_0'\n")


FACTS = """@hostname
gpu-07
@os
"Ubuntu 22.04.5 LTS"
@kernel
5.15.0-131-generic
@gpus
0, GPU-aaaa, NVIDIA H200, 00000000:1B:00.0, 570.133.20, 143771 MiB
1, GPU-bbbb, NVIDIA H200, 00000000:3C:00.0, 570.133.20, 143771 MiB
@rc gpus 0
@apps
48213, python3, GPU-bbbb, 71680 MiB
@rc apps 0
@smi
| NVIDIA-SMI 570.133.20             Driver Version: 570.133.20     CUDA Version: 12.8     |
@dcgmi

dcgmi  version: 4.2.3
@mpirun
mpirun (Open MPI) 4.1.4
"""


def test_a_hosts_answer_becomes_a_node_and_a_busy_gpu_is_its_reason() -> None:
    info = inventory.node_info("gpu-07", inventory.parse_facts(FACTS), server_version="SSH-2.0-OpenSSH_9.2",
                               host_key="ssh-ed25519 SHA256:x", launcher="mpirun")  # fmt: skip
    assert not info.ready
    assert info.conditions == {"Ready": "GPU 1 busy: pid 48213 (python3, 71680 MiB) holds it", "Reachable": "True"}
    assert (info.allocatable_gpus, info.os_image, info.kernel_version) == (
        2,
        "Ubuntu 22.04.5 LTS",
        "5.15.0-131-generic",
    )
    assert (info.gpu_product, info.driver_version, info.cuda_version) == ("NVIDIA H200", "570.133.20", "12.8")
    assert info.labels["recovery-acceptance/dcgm-version"] == "4.2.3"
    assert info.labels["recovery-acceptance/mpirun"] == "Open MPI 4.1.4"
    assert info.labels["recovery-acceptance/hostname"] == "gpu-07"


def test_a_host_whose_nvidia_smi_complains_or_that_lacks_mpirun_is_not_ready() -> None:
    text = FACTS.replace("48213, python3, GPU-bbbb, 71680 MiB\n", "").replace(
        "@rc gpus 0", "Unable to determine the device handle for GPU0000:9B:00.0: Unknown Error\n@rc gpus 15"
    )
    text = text.replace("mpirun (Open MPI) 4.1.4", "sh: 1: mpirun: not found")
    info = inventory.node_info("gpu-07", inventory.parse_facts(text), server_version="", host_key="", launcher="mpirun")
    assert info.conditions["Ready"] == (
        "head node without Open MPI: `mpirun --version` said 'sh: 1: mpirun: not found'; "
        "nvidia-smi: Unable to determine the device handle for GPU0000:9B:00.0: Unknown Error"
    )
    assert inventory.node_info("gpu-07", inventory.parse_facts(text), server_version="", host_key="",
                               launcher=None).conditions["Ready"].startswith("nvidia-smi: ")  # fmt: skip


def test_a_scan_of_a_host_lists_marked_processes_and_run_folders() -> None:
    text = (
        "@now\n1764547200\n@markers\n/proc/4242/environ:RECOVERY_ACCEPTANCE_RUN_ID=ra-20251201000000-ab12\n"
        "@ps\n    1     900 /sbin/init\n 4242     300 dcgmi diag -r 3 -j\n 4300      10 sleep 5\n"
        "@folders\n1764547000 /tmp/recovery-acceptance/ra-20251201000000-ab12/\n"
        "1764546000 /tmp/recovery-acceptance/odd/\n"
    )
    scan = remote.parse_scan(text)
    assert scan == Scan(
        (remote.RemoteProcess(4242, "ra-20251201000000-ab12", 300.0, "dcgmi diag -r 3 -j"),),
        (remote.RunFolderEntry("odd", "/tmp/recovery-acceptance/odd", 1200.0),
         remote.RunFolderEntry("ra-20251201000000-ab12", "/tmp/recovery-acceptance/ra-20251201000000-ab12", 200.0)),
    )  # fmt: skip
    from datetime import UTC, datetime

    now = datetime(2025, 12, 1, 1, 0, 0, tzinfo=UTC)
    found = janitor.leftovers_of("gpu-07", scan, skip_run=None, now=now)
    assert [str(f) for f in found] == [
        "gpu-07: process 4242 `dcgmi diag -r 3 -j` (run ra-20251201000000-ab12, 60 min old)",
        "gpu-07: folder /tmp/recovery-acceptance/odd (run odd, 20 min old)",
        "gpu-07: folder /tmp/recovery-acceptance/ra-20251201000000-ab12 (run ra-20251201000000-ab12, 60 min old)",
    ]
    assert [f.run_id for f in janitor.older_than(found, 1800)] == ["ra-20251201000000-ab12"] * 2
    assert janitor.leftovers_of("gpu-07", scan, skip_run="ra-20251201000000-ab12", now=now)[0].run_id == "odd"


def test_leases_on_the_hosts_say_which_runs_are_live_by_each_hosts_own_clock() -> None:
    from datetime import UTC, datetime, timedelta

    # host A's clock is an hour ahead of host B's: what counts is the time left by each host's own clock
    a = remote.parse_scan("@now\n1764550800\n@leases\n1764550830 /ra/ra-live/lease\n1764550700 /ra/ra-old/lease\n"
                          "garbage /ra/ra-bad/lease\n")  # fmt: skip
    b = remote.parse_scan("@now\n1764547200\n@leases\n1764547260 /ra/ra-live/lease\n")
    assert a.leases == (remote.RunLease("ra-live", 30.0), remote.RunLease("ra-old", -100.0))
    now = datetime(2025, 12, 1, tzinfo=UTC)
    assert janitor.live_runs([a, b], now) == {"ra-live": now + timedelta(seconds=60)}
    item = janitor.Leftover("gpu-07", "ra-live", "process 7 `sleep 9`", 120.0)
    assert str(item.as_leftover({"ra-live": now})) == (
        "gpu-07: process 7 `sleep 9`, 2 min old (run ra-live, live, lease until 2025-12-01T00:00:00Z)"
    )
    assert item.as_leftover({}).live_until is None
    assert remote.lease_lines("/tmp/ra", "ra-1", 90) == (
        "mkdir -p /tmp/ra/ra-1 && (umask 077; echo $(( $(date +%s) + 90 )) > /tmp/ra/ra-1/lease.tmp) && "
        "mv -f /tmp/ra/ra-1/lease.tmp /tmp/ra/ra-1/lease\n"
    )


def test_kernel_lines_and_evidence_of_a_host_are_read_as_far_as_they_go() -> None:
    from datetime import UTC, datetime

    from acceptance.clusters.ssh import signals

    since = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)
    text = ("2026-12-01T02:59:00+0000 host kernel: NVRM: Xid (PCI:0000:9a:00): 48, old\n"
            "2026-12-01T03:10:00,123456+00:00 NVRM: Xid (PCI:0000:9a:00): 79, pid=1, GPU has fallen off the bus.\n"
            "[ 1234.5] NVRM: GPU at PCI:0000:9a:00: GPU-x\n")  # fmt: skip
    events, readable = signals.parse_kernel("gpu-07", text, since)
    assert readable
    assert [(e.time, e.object, e.message) for e in events] == [
        (datetime(2026, 12, 1, 3, 10, 0, 123456, tzinfo=UTC), "Node/gpu-07",
         "NVRM: Xid (PCI:0000:9a:00): 79, pid=1, GPU has fallen off the bus."),
        (None, "Node/gpu-07", "[ 1234.5] NVRM: GPU at PCI:0000:9a:00: GPU-x"),
    ]  # fmt: skip
    assert signals.parse_kernel("gpu-07", f"{signals.UNREADABLE}\n", since) == ([], False)
    [unread] = signals.unread({"gpu-07": "permission denied"}, since)
    assert (unread.object, unread.reason, unread.message) == ("Node/gpu-07", "KernelLogNotRead",
                                                              "kernel log not read: permission denied")  # fmt: skip
    got = signals.parse_evidence(f"@dmesg\n{signals.UNREADABLE}\n@nvidia-smi-q\n==NVSMI LOG==\nDriver Version : 1\n")
    assert got == {"nvidia-smi-q": "==NVSMI LOG==\nDriver Version : 1\n"}


def test_the_wait_scripts_status_line_is_read_and_removed() -> None:
    assert remote.parse_wait("out\n", "warn\n@recovery-acceptance-status rc=3\n") == remote.WaitOutput(
        "out\n", "warn\n", 3
    )
    assert remote.parse_wait("", "@recovery-acceptance-status killed\n").exit_code is None
    gone = remote.parse_wait("", "@recovery-acceptance-status gone: /x does not exist\n")
    assert gone.gone
    assert gone.exit_code is None


def test_a_launched_workload_is_found_by_its_marker_and_ended_by_the_kill_script(tmp_path: Path) -> None:
    """The launch, wait and kill scripts run by a local sh, as sshd's sessions run them."""
    run_dir, run_id = str(tmp_path / "ra"), f"ra-test-{os.getpid()}"
    folder = remote.workload_folder(run_dir, run_id, "w")
    launch = remote.launch_script(folder, run_id, "w", "sleep 60 & sleep 61\n", {"NCCL_DEBUG": "WARN"}, 120,
                                  {"hostfile": "n1 slots=8\n"})  # fmt: skip
    started = subprocess.run(["sh", "-c", launch], capture_output=True, text=True, timeout=30, check=True)
    pid = int(started.stdout.strip())
    assert (Path(folder) / "hostfile").read_text() == "n1 slots=8\n"
    time.sleep(0.3)
    found = subprocess.run(["sh", "-c", remote.marker_pids(run_id)], capture_output=True, text=True, check=True)
    pids = {int(p) for p in found.stdout.split()}
    assert pid in pids
    assert len(pids) >= 3
    with pytest.raises(subprocess.CalledProcessError):
        subprocess.run(["sh", "-c", launch], capture_output=True, text=True, timeout=30, check=True)  # not twice
    killed = subprocess.run(["sh", "-c", remote.kill_script(run_id, run_dir)], capture_output=True, text=True,
                            timeout=30, check=True)  # fmt: skip
    assert killed.stdout == ""
    after = subprocess.run(["sh", "-c", remote.marker_pids(run_id)], capture_output=True, text=True, check=False)
    assert after.stdout == ""
    assert not Path(remote.run_folder(run_dir, run_id)).exists()


def test_a_finished_workload_is_collected_by_the_wait_script(tmp_path: Path) -> None:
    folder = remote.workload_folder(str(tmp_path), "ra-w", "echo")
    launch = remote.launch_script(folder, "ra-w", "echo", 'echo "out $NCCL_DEBUG"; echo err >&2; exit 3\n',
                                  {"NCCL_DEBUG": "WARN"}, 60)  # fmt: skip
    subprocess.run(["sh", "-c", launch], capture_output=True, text=True, timeout=30, check=True)
    waited = subprocess.run(["sh", "-c", remote.wait_script(folder)], capture_output=True, text=True, timeout=30,
                            check=False)  # fmt: skip
    assert remote.parse_wait(waited.stdout, waited.stderr) == remote.WaitOutput("out WARN\n", "err\n", 3)


def test_without_sshd_the_simulated_ssh_cluster_is_a_usage_error_that_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from acceptance import clusters
    from acceptance.profile import load_profile
    from acceptance.sim.ssh import sshd

    profile = load_profile("sim-ssh", Path(__file__).resolve().parents[1] / "baselines")
    monkeypatch.setattr(sshd.shutil, "which", lambda name, path=None: None)
    with pytest.raises(UsageError, match=r"sshd, ssh-keygen, mpirun not found: .*apt-get install -y openssh-server "
                                         r"openmpi-bin.*--cluster=sim` needs none of them"):  # fmt: skip
        clusters.open(profile, "ra-x")


def test_acceptance_cleanup_of_the_simulated_ssh_cluster_has_nothing_to_do(capsys: pytest.CaptureFixture[str]) -> None:
    from acceptance.cli import main

    baselines = Path(__file__).resolve().parents[1] / "baselines"
    assert main(["cleanup", "--cluster", "sim-ssh", "--baselines-dir", str(baselines)]) == 0
    assert "its hosts end with the run, even a killed one" in capsys.readouterr().out


def test_the_profiles_ssh_section_with_everything_it_may_say(tmp_path: Path) -> None:
    import yaml

    from acceptance.profile import load_profile_file

    data = yaml.safe_load((Path(__file__).resolve().parents[1] / "baselines" / "sim-ssh" / "cluster.yaml").read_text())
    del data["sim"]
    data["ssh"] = {
        "hosts": {n: f"10.0.0.{i}" for i, n in enumerate(data["nodes"]["names"], 1)}, "user": "ops", "port": 2222,
        "key": "keys/id", "known_hosts": "/etc/cluster/known_hosts", "config": "ssh_config", "jump": "ops@bastion:22",
        "head_node": "sim-node-02", "env": {"NCCL_DEBUG": "WARN"}, "connect_timeout": "5s", "command_timeout": "2m",
        "run_dir": "/var/tmp/ra/", "launcher": {"mpirun": "/opt/ompi/bin/mpirun", "args": ["--mca", "btl", "^openib"],
                                                "identity_file": "/home/ops/.ssh/id_cluster"},
        "smoke": {"launch": "per-node", "master_port": 29600, "log_node_rank": 15},
    }  # fmt: skip
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(data))
    ssh = load_profile_file(tmp_path / "cluster.yaml").ssh
    assert ssh == SshSettings(
        hosts=data["ssh"]["hosts"], user="ops", port=2222, key=tmp_path / "keys" / "id",
        known_hosts=Path("/etc/cluster/known_hosts"), head_node="sim-node-02", config=tmp_path / "ssh_config",
        jump="ops@bastion:22", env={"NCCL_DEBUG": "WARN"}, connect_timeout_s=5.0, command_timeout_s=120.0,
        run_dir="/var/tmp/ra", launcher_mpirun="/opt/ompi/bin/mpirun", launcher_args=("--mca", "btl", "^openib"),
        launcher_identity="/home/ops/.ssh/id_cluster", smoke_launch="per-node", master_port=29600, log_node_rank=15,
    )  # fmt: skip
    data["ssh"]["smoke"] = {"launch": "everywhere"}
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(
        UsageError,
        match=r"cluster\.yaml:\d+: ssh\.smoke\.launch: found \"everywhere\", expected one of mpirun, head, per-node",
    ):
        load_profile_file(tmp_path / "cluster.yaml")
