"""The SSH backend: bare metal, BYOS and instant clusters, reached with paramiko.

`SshCluster` is the `Cluster` of a profile's ``ssh:`` section: one connection per host for the
run (`hostset`), the workloads started and followed there (`workloads`), the inventory the
preflight judges, and the end of every process of the run on every host (`cleanup`) on a normal
end, on Ctrl-C and on SIGTERM (both raise KeyboardInterrupt in the controller while the cluster
is open); `remove_leftovers` does the same for what a SIGKILLed run left behind.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from types import FrameType
from typing import Any

from acceptance.clusters.base import ClusterEvent, ClusterInventory, Handle, NodeInfo, RunResult, Workload
from acceptance.clusters.ssh import inventory, janitor, remote
from acceptance.clusters.ssh.hostset import HostSet
from acceptance.clusters.ssh.workloads import Workloads
from acceptance.errors import ClusterError, SshError, UsageError
from acceptance.profile import Profile, SshSettings

# What stands where a Kubernetes cluster states its version: constant, so that a launcher or sshd
# upgrade alone does not make a run NOT COMPARABLE (the head node's Open MPI is checked by the preflight).
SERVER_VERSION = "none (bare metal over SSH)"
ACCEPT_NEW_WARNING = (
    "WARNING: --ssh-insecure-accept-new: unknown SSH host keys are accepted WITHOUT verification "
    "(changed keys are still refused); this run does not prove it reached the agreed hosts"
)


class SshCluster:
    """Hosts of the profile's ``ssh:`` section (see module docstring)."""

    def __init__(
        self,
        profile: Profile,
        run_id: str,
        *,
        settings: SshSettings | None = None,
        accept_new: bool = False,
        controller: bool = True,
    ) -> None:
        found = settings or profile.ssh
        if found is None:
            raise UsageError(f"{profile.path}: backend ssh needs an 'ssh' section")
        self.profile = profile
        self.settings: SshSettings = found
        self.run_id = run_id
        self.accept_new = accept_new
        self.hostset = HostSet(found, profile.nodes, accept_new=accept_new)
        self.workloads = Workloads(self.hostset, run_id, accept_new=accept_new)
        self._cleaned = False
        self._cleaning = False
        self._previous: dict[int, Any] = {}
        if controller and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self._cleaning:
            return  # ending the run's processes: a second Ctrl-C must not leave them running
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

    # ------------------------------------------------------------ Cluster protocol

    def describe(self) -> list[str]:
        targets = self.hostset.targets
        first = next(iter(targets.values()))
        via = f" via {first.jump}" if first.jump else ""
        lines = [f"bare metal over SSH: {len(self.profile.nodes)} hosts ({first.endpoint}{via}, ...), head node "
                 f"{self.settings.head_node}, host keys from {self.hostset.known.path}"]  # fmt: skip
        if self.accept_new:
            lines.append(ACCEPT_NEW_WARNING)
        return lines

    def attach_info(self) -> dict[str, str]:
        return {"accept_new": "1" if self.accept_new else ""}

    def workload_env(self) -> Mapping[str, str]:
        return self.settings.env

    def inventory(self) -> ClusterInventory:
        """Each node as its host reports it (`inventory`); a host that does not answer says why."""
        head, mpirun, hosts = self.settings.head_node, self.settings.launcher_mpirun, self.hostset
        timeout = self.settings.command_timeout_s
        answers = hosts.each(
            hosts.nodes,
            lambda conn: conn.run(
                remote.sh(inventory.inventory_script(mpirun if conn.node == head else None)), timeout
            ),
            timeout + self.settings.connect_timeout_s + 5,
        )
        infos: list[NodeInfo] = []
        for node in self.profile.nodes:
            answer = answers[node]
            if isinstance(answer, BaseException):
                infos.append(inventory.unreachable(node, hosts.why(node, answer)))
                continue
            facts = inventory.parse_facts(answer.stdout)
            conn = hosts.connections[node]
            host_key = f"{conn.key.key_type} {conn.key.fingerprint}" if conn.key else ""
            info = inventory.node_info(node, facts, server_version=conn.server_version, host_key=host_key,
                                       launcher=mpirun if node == head else None)  # fmt: skip
            self.workloads.hostnames[node] = info.labels.get(inventory.HOSTNAME_LABEL, node)
            if node == head:
                self.workloads.mpi = facts.mpirun
            infos.append(info)
        if all(not i.ready and i.conditions.get("Reachable") == "False" for i in infos):
            reasons = "; ".join(f"{i.name}: {i.conditions['Ready']}" for i in infos[:3])
            raise SshError(f"no host answers ({reasons}{' ...' if len(infos) > 3 else ''})")
        return ClusterInventory(server_version=SERVER_VERSION, nodes=tuple(infos))

    def submit(self, workloads: Sequence[Workload]) -> list[Handle]:
        return self.workloads.submit(workloads)

    def wait(self, handles: Sequence[Handle], deadline_s: float) -> list[RunResult]:
        return self.workloads.wait(handles, deadline_s)

    def events(self, nodes: Sequence[str], since: datetime) -> list[ClusterEvent]:
        """NVIDIA kernel messages (XIDs) of the hosts since `since`, where the journal can be read."""
        stamp = int(since.timestamp())
        script = (f"journalctl -k -q --no-pager -o short-iso --since=@{stamp} 2>/dev/null | "
                  "grep -E 'NVRM: (Xid|GPU)' | tail -n 200")  # fmt: skip
        out: list[ClusterEvent] = []
        for node, answer in self.hostset.each(list(nodes), self.hostset.script(script, 30), 40).items():
            if isinstance(answer, BaseException):
                continue
            for line in answer.stdout.splitlines():
                when, _, rest = line.partition(" ")
                try:
                    time_ = datetime.fromisoformat(when)
                except ValueError:
                    time_ = None
                out.append(ClusterEvent(time_, f"host/{node}", "NVRM", rest.strip() or line, "Warning"))
        return sorted(out, key=lambda e: e.time or since)

    # ------------------------------------------------------------ what runs leave behind

    def _scan(self) -> tuple[list[janitor.Leftover], list[str]]:
        now = datetime.now(UTC)
        found: list[janitor.Leftover] = []
        unreachable: list[str] = []
        hosts = self.hostset
        scan = hosts.script(remote.scan_script(self.settings.run_dir))
        for node, answer in hosts.each(hosts.nodes, scan, self.settings.command_timeout_s + 20).items():
            if isinstance(answer, BaseException):
                unreachable.append(f"{node} ({hosts.why(node, answer)})")
                continue
            found += janitor.leftovers_of(node, remote.parse_scan(answer.stdout), skip_run=self.run_id, now=now)
        return found, unreachable

    def leftovers(self) -> list[str]:
        """Processes and run folders of earlier runs on any host."""
        found, unreachable = self._scan()
        if unreachable:
            raise SshError(f"cannot look for leftovers on {', '.join(unreachable)}")
        return [str(item) for item in found]

    def remove_leftovers(self, older_than_s: float | None, dry_run: bool = False) -> list[str]:
        """End the processes and remove the folders of runs at least `older_than_s` old, on every host."""
        found, unreachable = self._scan()
        if unreachable and len(unreachable) == len(self.hostset.nodes):
            raise SshError(f"no host answers: {', '.join(unreachable)}")
        chosen = janitor.older_than(found, older_than_s)
        if not dry_run:
            runs = janitor.by_node(chosen)
            script = {n: janitor.removal_script(self.settings.run_dir, ids) for n, ids in runs.items()}
            self.hostset.each(list(runs), lambda conn: conn.run(remote.sh(script[conn.node]), 120), 150)
        return [str(item) for item in chosen] + [f"{u}: not checked" for u in unreachable]

    def cleanup(self) -> None:
        """End every process of this run on every host and remove its folders; raise naming what remains."""
        if self._cleaned:
            return
        hosts = self.hostset
        self._cleaning = True
        try:
            answers = hosts.each(
                hosts.nodes, hosts.script(remote.kill_script(self.run_id, self.settings.run_dir), 60), 90
            )
        finally:
            self._cleaning = False
        left: list[str] = []
        for node, answer in answers.items():
            if isinstance(answer, BaseException) and hosts.connections[node].ever_connected:
                left.append(f"{node}: not checked ({hosts.why(node, answer)})")  # reached before: something may run
            elif not isinstance(answer, BaseException):
                left += janitor.left_lines(node, answer.stdout)
            # else: never reachable in this run, so nothing of it can run there
        self._cleaned = not left
        if left:
            raise ClusterError(f"processes of run {self.run_id} may remain: {'; '.join(left[:5])}")

    def close(self) -> None:
        self.hostset.close()
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()
