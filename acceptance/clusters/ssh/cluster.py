"""The SSH backend: bare metal, BYOS and instant clusters, reached with paramiko.

`SshCluster` keeps one connection per host for the run. Workloads run detached on their hosts
(`remote.launch_script`) under the run-id marker, so a pytest process that adopts a submission
finds them, and they end at their deadline even without the harness. `wait` follows them over
SSH; `cleanup` ends every process of the run on every host and removes its folders, on a
normal end, on Ctrl-C and on SIGTERM (both raise KeyboardInterrupt in the controller while the
cluster is open); `remove_leftovers` does the same for the runs a SIGKILL left behind.
"""

from __future__ import annotations

import getpass
import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from types import FrameType
from typing import Any

from acceptance.clusters.base import ClusterEvent, ClusterInventory, Handle, NodeInfo, RunResult, Workload
from acceptance.clusters.ssh import inventory, janitor, parallel, remote
from acceptance.clusters.ssh.connection import CommandResult, Connection, Connector
from acceptance.clusters.ssh.hostkeys import KnownHosts
from acceptance.clusters.ssh.mpi import MpiVersion, parse_mpirun_version
from acceptance.clusters.ssh.plans import HostCommand, PlanContext, plan
from acceptance.clusters.ssh.results import HostOutcome, run_result
from acceptance.clusters.ssh.targets import HostTarget, load_config, resolve_targets
from acceptance.errors import AcceptanceError, ClusterError, SshError, UsageError
from acceptance.profile import Profile, SshSettings

WAIT_SLACK_S = 30.0
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
        self.targets: dict[str, HostTarget] = resolve_targets(
            found, profile.nodes, load_config(found.config), getpass.getuser()
        )
        self.known = KnownHosts(found.known_hosts, accept_new=accept_new)
        self.connector = Connector(self.known, found.connect_timeout_s)
        self.connections = {node: Connection(t, self.connector) for node, t in self.targets.items()}
        self._hostnames: dict[str, str] = {}
        self._mpi: MpiVersion | None = None
        self._launch_errors: dict[tuple[str, str], str] = {}
        self._cleaned = False
        self._cleaning = False
        self._previous: dict[int, Any] = {}
        if controller and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._on_signal)

    # ------------------------------------------------------------ plumbing

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self._cleaning:
            return  # ending the run's processes: a second Ctrl-C must not leave them running
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

    @property
    def nodes(self) -> list[str]:
        return list(self.targets)

    def _each(self, nodes: Sequence[str], fn: Callable[[Connection], CommandResult], deadline_s: float) -> dict[
        str, CommandResult | BaseException
    ]:  # fmt: skip
        outcomes = parallel.each(lambda node: fn(self.connections[node]), list(nodes), deadline_s)
        out: dict[str, CommandResult | BaseException] = {}
        for node, o in zip(nodes, outcomes, strict=True):
            if o.error is not None:
                out[node] = o.error
            elif o.value is None:
                out[node] = SshError(f"{node}: no answer within {deadline_s:.0f} s")
            else:
                out[node] = o.value
        return out

    def _script(self, script: str, timeout_s: float | None = None) -> Callable[[Connection], CommandResult]:
        timeout = timeout_s or self.settings.command_timeout_s
        return lambda conn: conn.run(remote.sh(script), timeout)

    @staticmethod
    def _why(node: str, error: BaseException) -> str:
        text = str(error)
        return text[len(node) + 2 :] if text.startswith(f"{node}: ") else text

    # ------------------------------------------------------------ Cluster protocol

    def describe(self) -> list[str]:
        head = self.targets[self.settings.head_node]
        first = next(iter(self.targets.values()))
        via = f" via {first.jump}" if first.jump else ""
        lines = [f"bare metal over SSH: {len(self.profile.nodes)} hosts ({first.endpoint}{via}, ...), head node "
                 f"{head.node}, host keys from {self.known.path}"]  # fmt: skip
        if self.accept_new:
            lines.append(ACCEPT_NEW_WARNING)
        return lines

    def attach_info(self) -> dict[str, str]:
        return {"accept_new": "1" if self.accept_new else ""}

    def workload_env(self) -> Mapping[str, str]:
        return self.settings.env

    def inventory(self) -> ClusterInventory:
        head = self.settings.head_node
        mpirun = self.settings.launcher_mpirun
        answers = self._each(
            self.nodes,
            lambda conn: conn.run(remote.sh(inventory.inventory_script(mpirun if conn.node == head else None)),
                                  self.settings.command_timeout_s),
            self.settings.command_timeout_s + self.settings.connect_timeout_s + 5,
        )  # fmt: skip
        infos: list[NodeInfo] = []
        for node in self.profile.nodes:
            answer = answers[node]
            if isinstance(answer, BaseException):
                infos.append(inventory.unreachable(node, self._why(node, answer)))
                continue
            facts = inventory.parse_facts(answer.stdout)
            conn = self.connections[node]
            key = conn.key
            host_key = f"{key.key_type} {key.fingerprint}" if key else ""
            info = inventory.node_info(node, facts, server_version=conn.server_version, host_key=host_key,
                                       launcher=self.settings.launcher_mpirun if node == head else None)  # fmt: skip
            self._hostnames[node] = info.labels.get(inventory.HOSTNAME_LABEL, node)
            if node == head:
                self._mpi = facts.mpirun
            infos.append(info)
        if all(not i.ready and i.conditions.get("Reachable") == "False" for i in infos):
            reasons = "; ".join(f"{i.name}: {i.conditions['Ready']}" for i in infos[:3])
            raise SshError(f"no host answers ({reasons}{' ...' if len(infos) > 3 else ''})")
        return ClusterInventory(server_version=SERVER_VERSION, nodes=tuple(infos))

    def _mpi_version(self) -> MpiVersion | None:
        if self._mpi is None:
            version = self._script(f"{self.settings.launcher_mpirun} --version 2>&1 | head -n 3")
            found = self._each([self.settings.head_node], version, 60)
            answer = found[self.settings.head_node]
            if isinstance(answer, BaseException):
                raise SshError(f"head node {self.settings.head_node}: {self._why(self.settings.head_node, answer)}")
            self._mpi = parse_mpirun_version(answer.stdout)
        return self._mpi

    def _plan_context(self, needs_mpi: bool) -> PlanContext:
        s = self.settings
        keys: dict[str, list[tuple[str, str]]] = {}
        for node, t in self.targets.items():
            conn = self.connections[node]
            if conn.key is not None:
                keys[node] = [(conn.key.key_type, conn.key.base64)]
            else:
                known = self.known.keys.lookup(t.endpoint.known_hosts_name)
                keys[node] = [(kind, key.get_base64()) for kind, key in sorted((known or {}).items())]
        mpi = self._mpi_version() if needs_mpi else None
        return PlanContext(
            run_id=self.run_id, run_dir=s.run_dir, head=s.head_node,
            endpoints={n: t.endpoint for n, t in self.targets.items()}, known_keys=keys, env=dict(s.env),
            mpi_major=mpi.major if mpi else 4, mpirun=s.launcher_mpirun, mpirun_args=s.launcher_args,
            launcher_identity=s.launcher_identity, accept_new=self.accept_new, connect_timeout_s=s.connect_timeout_s,
            smoke_launch=s.smoke_launch, master_port=s.master_port, log_node_rank=s.log_node_rank,
        )  # fmt: skip

    def _manifest(self, workload: str, command: HostCommand) -> dict[str, Any]:
        target = self.targets[command.node]
        key = self.connections[command.node].key
        return {
            "kind": "SshCommand",
            "workload": workload,
            "run_id": self.run_id,
            "host": str(target.endpoint),
            "via": str(target.jump) if target.jump else None,
            "host_key": key.as_dict() if key else None,
            **command.to_json(),
        }

    def submit(self, workloads: Sequence[Workload]) -> list[Handle]:
        names = [w.name for w in workloads]
        if len(set(names)) != len(names):
            raise UsageError(f"workload names must be unique within a submission: {names}")
        needs_mpi = any(c.mpi for w in workloads for c in plan(self._plan_context(False), w))
        ctx = self._plan_context(needs_mpi)
        plans = [(w, plan(ctx, w)) for w in workloads]
        commands = [(w.name, c) for w, cs in plans for c in cs]
        launched = parallel.each(self._launch, commands, self.settings.command_timeout_s + 30)
        for (name, command), outcome in zip(commands, launched, strict=True):
            if outcome.error is not None or outcome.value is None:
                why = self._why(command.node, outcome.error) if outcome.error else "no answer"
                self._launch_errors[(name, command.node)] = f"could not start on {command.node}: {why}"
        now = datetime.now(UTC)
        return [
            Handle(w, tuple(("process", f"{c.node}:{c.folder}") for c in cs),
                   tuple(self._manifest(w.name, c) for c in cs), now)
            for w, cs in plans
        ]  # fmt: skip

    def _launch(self, item: tuple[str, HostCommand]) -> str:
        name, command = item
        script = remote.launch_script(command.folder, self.run_id, name, command.script, command.env,
                                      command.deadline_s, command.files)  # fmt: skip
        result = self.connections[command.node].run(remote.sh(script), self.settings.command_timeout_s)
        if result.exit_code != 0:
            said = result.stderr.strip().splitlines()[-1:] or [f"exit {result.exit_code}"]
            raise SshError(f"{command.node}: {said[0]}")
        return result.stdout.strip()

    def wait(self, handles: Sequence[Handle], deadline_s: float) -> list[RunResult]:
        jobs = [(h, HostCommand.from_json(m)) for h in handles for m in h.manifests]
        start = time.monotonic()

        def follow(job: tuple[Handle, HostCommand]) -> HostOutcome:
            handle, command = job
            error = self._launch_errors.get((handle.workload.name, command.node))
            if error is not None:
                return HostOutcome(command, None, None, None, error=error)
            limit = max(1.0, min(deadline_s, command.deadline_s) - (time.monotonic() - start))
            try:
                result = self.connections[command.node].run(remote.sh(remote.wait_script(command.folder)), limit)
            except AcceptanceError as exc:
                lost = f"lost {command.node} while waiting: {self._why(command.node, exc)}"
                return HostOutcome(command, handle.submitted, datetime.now(UTC), None, error=lost)
            if result.timed_out:
                return self._end_late(handle, command)
            waited = remote.parse_wait(result.stdout, result.stderr)
            return HostOutcome(command, handle.submitted, result.finished, waited)

        outcomes = parallel.each(follow, jobs, deadline_s + WAIT_SLACK_S, limit=64)
        per_handle: dict[int, list[HostOutcome]] = {}
        for (handle, command), o in zip(jobs, outcomes, strict=True):
            got = o.value if o.value is not None else HostOutcome(
                command, handle.submitted, datetime.now(UTC), None, error=f"following {command.node}: {o.error}"
            )  # fmt: skip
            per_handle.setdefault(id(handle), []).append(got)
        self._learn_hostnames([n for h in handles for n in _nodes(h.workload)])
        return [run_result(h, per_handle[id(h)], self._hostnames) for h in handles]

    def _end_late(self, handle: Handle, command: HostCommand) -> HostOutcome:
        """A workload past its deadline: end its processes, keep what it printed."""
        conn = self.connections[command.node]
        try:
            conn.run(remote.sh(remote.kill_script(self.run_id, self.settings.run_dir, handle.workload.name)), 60)
            result = conn.run(remote.sh(remote.wait_script(command.folder)), 30)
            waited = remote.parse_wait(result.stdout, result.stderr)
        except AcceptanceError:
            waited = None
        return HostOutcome(command, handle.submitted, datetime.now(UTC), waited, timed_out=True)

    def _learn_hostnames(self, nodes: Sequence[str]) -> None:
        missing = [n for n in dict.fromkeys(nodes) if n not in self._hostnames and n in self.connections]
        if not missing:
            return
        for node, answer in self._each(missing, self._script("hostname", 30), 40).items():
            if not isinstance(answer, BaseException) and answer.stdout.strip():
                self._hostnames[node] = answer.stdout.strip().splitlines()[0]

    def events(self, nodes: Sequence[str], since: datetime) -> list[ClusterEvent]:
        """NVIDIA kernel messages (XIDs) of the hosts since `since`, where the journal can be read."""
        stamp = int(since.timestamp())
        script = (f"journalctl -k -q --no-pager -o short-iso --since=@{stamp} 2>/dev/null | "
                  "grep -E 'NVRM: (Xid|GPU)' | tail -n 200")  # fmt: skip
        out: list[ClusterEvent] = []
        for node, answer in self._each(list(nodes), self._script(script, 30), 40).items():
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
        scan = self._script(remote.scan_script(self.settings.run_dir))
        limit = self.settings.command_timeout_s + self.settings.connect_timeout_s
        for node, answer in self._each(self.nodes, scan, limit).items():
            if isinstance(answer, BaseException):
                unreachable.append(f"{node} ({self._why(node, answer)})")
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
        if unreachable and len(unreachable) == len(self.nodes):
            raise SshError(f"no host answers: {', '.join(unreachable)}")
        chosen = janitor.older_than(found, older_than_s)
        if not dry_run:
            runs = janitor.by_node(chosen)
            script = {n: janitor.removal_script(self.settings.run_dir, ids) for n, ids in runs.items()}
            self._each(list(runs), lambda conn: conn.run(remote.sh(script[conn.node]), 120), 150)
        return [str(item) for item in chosen] + [f"{u}: not checked" for u in unreachable]

    def cleanup(self) -> None:
        """End every process of this run on every host and remove its folders; raise naming what remains."""
        if self._cleaned:
            return
        self._cleaning = True
        try:
            script = remote.kill_script(self.run_id, self.settings.run_dir)
            answers = self._each(self.nodes, self._script(script, 60), 90)
        finally:
            self._cleaning = False
        left: list[str] = []
        for node, answer in answers.items():
            if isinstance(answer, BaseException) and self.connections[node].ever_connected:
                left.append(f"{node}: not checked ({self._why(node, answer)})")  # reached before: something may run
            elif isinstance(answer, BaseException):
                continue  # never reachable in this run: nothing of it can run there
            else:
                left += janitor.left_lines(node, answer.stdout)
        self._cleaned = not left
        if left:
            raise ClusterError(f"processes of run {self.run_id} may remain: {'; '.join(left[:5])}")

    def close(self) -> None:
        self.connector.close()
        for conn in self.connections.values():
            conn.close()
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()


def _nodes(workload: Workload) -> tuple[str, ...]:
    nodes: tuple[str, ...] = getattr(workload, "nodes", ())
    return nodes or (str(getattr(workload, "node", "")),)
