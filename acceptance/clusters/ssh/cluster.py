"""The SSH backend: bare metal, BYOS and instant clusters, reached with paramiko.

`SshCluster` is the `Cluster` of a profile's ``ssh:`` section: one connection per host for the
run (`hostset`), the workloads started and followed there under the run's lease (`workloads`,
`lease`), the inventory the preflight judges, and the end of every process of the run on every
host (`cleanup`) on a normal end and on Ctrl-C or SIGTERM (the plugin turns both into the run's
end); `remove_leftovers` does the same for what a SIGKILLed run left behind once its lease ran
out. What only Kubernetes knows (a job's pods by label) is a usage error here, never an empty
answer; `node_signals` is what the hosts say now (reachable, GPUs seen, kernel Xid lines).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime

from acceptance.clusters.base import (
    ClusterEvent,
    ClusterInventory,
    Handle,
    JobLogs,
    Leftover,
    NodeInfo,
    ProgressSink,
    Workload,
    WorkloadResult,
)
from acceptance.clusters.ssh import inventory, janitor, parallel, remote, signals
from acceptance.clusters.ssh.hostset import HostSet, read_inventory
from acceptance.clusters.ssh.settings import SshSettings
from acceptance.clusters.ssh.workloads import Workloads
from acceptance.errors import ClusterError, SshError, UsageError
from acceptance.profile import Profile

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
        readings = read_inventory(self.hostset)
        infos: list[NodeInfo] = []
        for node in self.profile.nodes:
            reading = readings[node]
            if reading.facts is not None:
                self.workloads.hostnames[node] = reading.info.labels.get(inventory.HOSTNAME_LABEL, node)
                if node == self.settings.head_node:
                    self.workloads.mpi = reading.facts.mpirun
            infos.append(reading.info)
        if all(not i.ready and i.conditions.get("Reachable") == "False" for i in infos):
            reasons = "; ".join(f"{i.name}: {i.conditions['Ready']}" for i in infos[:3])
            raise SshError(f"no host answers ({reasons}{' ...' if len(infos) > 3 else ''})")
        return ClusterInventory(server_version=SERVER_VERSION, nodes=tuple(infos))

    def submit(self, workloads: Sequence[Workload]) -> list[Handle]:
        return self.workloads.submit(workloads)

    def wait(
        self, handles: Sequence[Handle], deadline_s: float, *, progress: ProgressSink | None = None
    ) -> list[WorkloadResult]:
        return self.workloads.wait(handles, deadline_s, progress)

    def follow(self, handle: Handle, deadline_s: float) -> Iterator[str]:
        """`StreamsLogs`: the workload's launcher stdout as it arrives."""
        return self.workloads.follow(handle, deadline_s)

    def stop(self, handle: Handle, reason: str) -> None:
        """`StreamsLogs`: end the workload's processes; the wait awaiting it keeps what they printed."""
        self.workloads.stop(handle, reason)

    def events(self, nodes: Sequence[str], since: datetime) -> list[ClusterEvent]:
        """NVIDIA kernel lines (Xids) of the hosts since `since`; a host whose kernel log was not read says so."""
        found, silent = signals.kernel_events(self.hostset, nodes, since)
        return found + signals.unread(silent, datetime.now(UTC))

    def job_logs(self, selector: str, namespace: str | None = None) -> JobLogs:
        """A job's pods by label exist only on Kubernetes: over SSH the rank logs are files (``--job-logs PATH``)."""
        raise UsageError(
            f"{self.profile.name}: a job's pods by label selector ({selector!r}) exist only on Kubernetes; bare-metal "
            "hosts have no pods to read: pass the job's rank logs as files (acceptance bundle --job-logs PATH ...)"
        )

    def host_evidence(self, nodes: Sequence[str]) -> tuple[dict[str, dict[str, str]], list[str]]:
        """Each node's kernel log and ``nvidia-smi -q`` (an incident bundle's evidence of the affected hosts)."""
        return signals.host_evidence(self.hostset, nodes)

    def node_signals(self, nodes: Sequence[str], since: datetime) -> list[ClusterEvent]:
        """What the hosts say now: unreachable (not Ready), fewer GPUs than agreed, kernel Xid lines since `since`."""
        return signals.node_signals(self, nodes, since)

    # ------------------------------------------------------------ what runs leave behind

    def _scan(self) -> tuple[list[janitor.Leftover], dict[str, datetime], list[str]]:
        now = datetime.now(UTC)
        found: list[janitor.Leftover] = []
        scans: list[remote.Scan] = []
        unreachable: list[str] = []
        hosts = self.hostset
        scan = hosts.script(remote.scan_script(self.settings.run_dir))
        for node, answer in hosts.each(hosts.nodes, scan, self.settings.command_timeout_s + 20).items():
            if isinstance(answer, BaseException):
                unreachable.append(f"{node} ({hosts.why(node, answer)})")
                continue
            scans.append(remote.parse_scan(answer.stdout))
            found += janitor.leftovers_of(node, scans[-1], skip_run=self.run_id, now=now)
        return found, janitor.live_runs(scans, now), unreachable

    def leftovers(self) -> list[Leftover]:
        """Processes and run folders of other runs on any host: live ones (a lease) and what crashed runs left."""
        found, live, unreachable = self._scan()
        if unreachable:
            raise SshError(f"cannot look for leftovers on {', '.join(unreachable)}")
        return [item.as_leftover(live) for item in found]

    def remove_leftovers(
        self, older_than_s: float | None, dry_run: bool = False, include_live: bool = False
    ) -> list[Leftover]:
        """End the processes and remove the folders of ended runs at least `older_than_s` old, on every host
        (a live run's too with `include_live`); a host that does not answer is an error naming it, after the rest."""
        found, live, unreachable = self._scan()
        if unreachable and len(unreachable) == len(self.hostset.nodes):
            raise SshError(f"no host answers: {', '.join(unreachable)}")
        chosen = [i for i in janitor.older_than(found, older_than_s) if include_live or i.run_id not in live]
        if not dry_run:
            runs = janitor.by_node(chosen)
            script = {n: janitor.removal_script(self.settings.run_dir, ids) for n, ids in runs.items()}
            self.hostset.each(list(runs), lambda conn: conn.run(remote.sh(script[conn.node]), 120), 150)
        out = [item.as_leftover(live) for item in chosen]
        if unreachable:  # never "nothing left" for a host that was not asked: say what was done and what was not
            done = "found" if dry_run else "removed"
            shown = "; ".join(map(str, out[:5])) + (f" (+{len(out) - 5} more)" if len(out) > 5 else "")
            raise SshError(f"{len(out)} item(s) of other runs {done} on the hosts that answered"
                           f"{': ' + shown if out else ''}; NOT checked: {', '.join(unreachable)}")  # fmt: skip
        return out

    def cleanup(self) -> None:
        """End every process of this run on every host and remove its folders; raise naming what remains."""
        if self._cleaned:
            return
        self.workloads.lease.release()
        hosts = self.hostset
        kill = hosts.script(remote.kill_script(self.run_id, self.settings.run_dir), 60)
        answers = parallel.shielded(lambda: hosts.each(hosts.nodes, kill, 90), 100)
        if answers is None:
            raise ClusterError(f"processes of run {self.run_id} may remain: the hosts did not answer within 100 s")
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
        self.workloads.lease.release()
        self.hostset.close()
