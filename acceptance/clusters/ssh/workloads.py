"""Starting workloads on the hosts and following them to their end.

Each host command (`plans`) starts detached in its own session under the run-id marker
(`remote.launch_script`), after the run's lease is written there (`lease`), so a pytest process
that adopts a submission finds it by its folder, and it ends at its deadline even without the
harness. `wait` follows every host of every
workload at once; one past its deadline has its processes ended and keeps what it printed.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from acceptance.clusters.base import Handle, ProgressSink, Workload, WorkloadResult, workload_nodes
from acceptance.clusters.ssh import parallel, remote
from acceptance.clusters.ssh.hostset import HostSet
from acceptance.clusters.ssh.lease import SshLease
from acceptance.clusters.ssh.mpi import MpiVersion, parse_mpirun_version
from acceptance.clusters.ssh.plans import MAIN, HostCommand, PlanContext, plan
from acceptance.clusters.ssh.progress import done_progress, running_progress
from acceptance.clusters.ssh.results import HostOutcome, run_result
from acceptance.errors import AcceptanceError, SshError, UsageError

WAIT_SLACK_S = 30.0


class Workloads:
    """The workloads of one run on `hosts` (one per pytest process; the hosts' state is what they share)."""

    def __init__(self, hosts: HostSet, run_id: str, *, accept_new: bool) -> None:
        self.hosts = hosts
        self.settings = hosts.settings
        self.run_id = run_id
        self.lease = SshLease(hosts, run_id, hosts.settings.lease_s)
        self.accept_new = accept_new
        self.hostnames: dict[str, str] = {}  # node → the name its processes print (nccl-tests' rank lines)
        self.mpi: MpiVersion | None = None
        self._launch_errors: dict[tuple[str, str], str] = {}
        self._stops: dict[str, str] = {}  # workload name -> why the harness stopped it (`stop`)

    def _mpi_version(self) -> MpiVersion | None:
        if self.mpi is None:
            head = self.settings.head_node
            version = self.hosts.script(f"{self.settings.launcher_mpirun} --version 2>&1 | head -n 3")
            answer = self.hosts.each([head], version, 60)[head]
            if isinstance(answer, BaseException):
                raise SshError(f"head node {head}: {self.hosts.why(head, answer)}")
            self.mpi = parse_mpirun_version(answer.stdout)
        return self.mpi

    def _context(self, needs_mpi: bool) -> PlanContext:
        s, hosts = self.settings, self.hosts
        keys: dict[str, list[tuple[str, str]]] = {}
        for node, t in hosts.targets.items():
            key = hosts.connections[node].key
            if key is not None:  # the key this run verified
                keys[node] = [(key.key_type, key.base64)]
            else:  # or what known_hosts lists for it
                known = hosts.known.keys.lookup(t.endpoint.known_hosts_name)
                keys[node] = [(kind, found.get_base64()) for kind, found in sorted((known or {}).items())]
        mpi = self._mpi_version() if needs_mpi else None
        return PlanContext(
            run_id=self.run_id, run_dir=s.run_dir, head=s.head_node,
            endpoints={n: t.endpoint for n, t in hosts.targets.items()}, known_keys=keys, env=dict(s.env),
            mpi_major=mpi.major if mpi else 4, mpirun=s.launcher_mpirun, mpirun_args=s.launcher_args,
            launcher_identity=s.launcher_identity, accept_new=self.accept_new, connect_timeout_s=s.connect_timeout_s,
            smoke_launch=s.smoke_launch, master_port=s.master_port, log_node_rank=s.log_node_rank,
        )  # fmt: skip

    def _manifest(self, workload: str, command: HostCommand) -> dict[str, Any]:
        """What was run where, as the evidence keeps it (and as `wait` reads it back)."""
        target = self.hosts.targets[command.node]
        key = self.hosts.connections[command.node].key
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
        needs_mpi = any(c.mpi for w in workloads for c in plan(self._context(False), w))
        ctx = self._context(needs_mpi)
        plans = [(w, plan(ctx, w)) for w in workloads]
        commands = [(w.name, c) for w, cs in plans for c in cs]
        launched = parallel.each(self._launch, commands, self.settings.command_timeout_s + 30)
        self.lease.hold(c.node for _, c in commands)
        for (name, command), outcome in zip(commands, launched, strict=True):
            if outcome.error is not None or outcome.value is None:
                why = self.hosts.why(command.node, outcome.error) if outcome.error else "no answer"
                self._launch_errors[(name, command.node)] = f"could not start on {command.node}: {why}"
        now = datetime.now(UTC)
        return [
            Handle(w, tuple(("process", f"{c.node}:{c.folder}") for c in cs),
                   tuple(self._manifest(w.name, c) for c in cs), now)
            for w, cs in plans
        ]  # fmt: skip

    def _launch(self, item: tuple[str, HostCommand]) -> str:
        name, command = item
        script = self.lease.lines() + remote.launch_script(
            command.folder, self.run_id, name, command.script, command.env, command.deadline_s, command.files
        )
        result = self.hosts.connections[command.node].run(remote.sh(script), self.settings.command_timeout_s)
        if result.exit_code != 0:
            said = result.stderr.strip().splitlines()[-1:] or [f"exit {result.exit_code}"]
            raise SshError(f"{command.node}: {said[0]}")
        return result.stdout.strip()

    def wait(
        self, handles: Sequence[Handle], deadline_s: float, progress: ProgressSink | None = None
    ) -> list[WorkloadResult]:
        jobs = [(h, HostCommand.from_json(m)) for h in handles for m in h.manifests]
        self.lease.hold(c.node for _, c in jobs)  # whoever waits keeps the run alive (a process adopting a submission)
        start = time.monotonic()

        def follow(job: tuple[Handle, HostCommand]) -> HostOutcome:
            handle, command = job
            error = self._launch_errors.get((handle.workload.name, command.node))
            if error is not None:
                return HostOutcome(command, None, None, None, error=error)
            limit = max(1.0, min(deadline_s, command.deadline_s) - (time.monotonic() - start))
            conn = self.hosts.connections[command.node]
            try:
                result = conn.run(remote.sh(remote.wait_script(command.folder)), limit)
            except AcceptanceError as exc:
                lost = f"lost {command.node} while waiting: {self.hosts.why(command.node, exc)}"
                return HostOutcome(command, handle.submitted, datetime.now(UTC), None, error=lost)
            if result.timed_out:
                return self._end_late(handle, command)
            return HostOutcome(
                command, handle.submitted, result.finished, remote.parse_wait(result.stdout, result.stderr)
            )

        def tick(so_far: Sequence[parallel.Outcome[HostOutcome]]) -> None:
            assert progress is not None  # handed to `parallel.each` only when there is a sink
            ended = [(h, o.done) for (h, _), o in zip(jobs, so_far, strict=True)]
            progress(running_progress(handles, ended, deadline_s, datetime.now(UTC)))

        outcomes = parallel.each(
            follow, jobs, deadline_s + WAIT_SLACK_S, limit=64, tick=tick if progress is not None else None
        )
        per_handle: dict[int, list[HostOutcome]] = {}
        for (handle, command), o in zip(jobs, outcomes, strict=True):
            got = o.value if o.value is not None else HostOutcome(
                command, handle.submitted, datetime.now(UTC), None, error=f"following {command.node}: {o.error}"
            )  # fmt: skip
            per_handle.setdefault(id(handle), []).append(got)
        self.learn_hostnames([n for h in handles for n in workload_nodes(h.workload)])
        results = [self._stopped(h, run_result(h, per_handle[id(h)], self.hostnames)) for h in handles]
        if progress is not None:
            progress(done_progress(handles, results, deadline_s, datetime.now(UTC)))
        return results

    def _stopped(self, handle: Handle, result: WorkloadResult) -> WorkloadResult:
        """A workload the harness stopped (`stop`) ended because it was: a success with no exit status."""
        why = self._stops.get(handle.workload.name)
        if why is None or result.status not in ("succeeded", "failed"):
            return result
        return replace(result, status="succeeded", exit_code=None, stopped=why, reason=f"stopped by the harness: {why}")

    def follow(self, handle: Handle, deadline_s: float) -> Iterator[str]:
        """The MAIN host's stdout of the workload (the head node's ``mpirun``) as it grows, in complete lines."""
        command = next((HostCommand.from_json(m) for m in handle.manifests if m.get("role") == MAIN), None)
        if command is None:
            return
        chunks: queue.Queue[bytes | None] = queue.Queue()

        def read() -> None:
            try:
                conn = self.hosts.connections[command.node]
                conn.run(remote.sh(remote.follow_script(command.folder)), deadline_s, on_stdout=chunks.put)
            except AcceptanceError:
                pass
            finally:
                chunks.put(None)

        threading.Thread(target=read, name=f"follow-{handle.workload.name}", daemon=True).start()
        pending = b""
        while handle.workload.name not in self._stops:
            chunk = chunks.get()
            if chunk is None:
                if pending:
                    yield pending.decode("utf-8", "replace")
                return
            pending += chunk
            cut = pending.rfind(b"\n") + 1
            if cut:
                yield pending[:cut].decode("utf-8", "replace")
                pending = pending[cut:]

    def stop(self, handle: Handle, reason: str) -> None:
        """End the workload's processes on every host (TERM, then KILL); its `wait` keeps what they printed."""
        self._stops.setdefault(handle.workload.name, reason)
        nodes = [HostCommand.from_json(m).node for m in handle.manifests]
        kill = remote.kill_script(self.run_id, self.settings.run_dir, handle.workload.name)
        self.hosts.each(nodes, self.hosts.script(kill, 60), 70)

    def _end_late(self, handle: Handle, command: HostCommand) -> HostOutcome:
        """A workload past its deadline: end its processes, keep what it printed."""
        conn = self.hosts.connections[command.node]
        try:
            conn.run(remote.sh(remote.kill_script(self.run_id, self.settings.run_dir, handle.workload.name)), 60)
            result = conn.run(remote.sh(remote.wait_script(command.folder)), 30)
            waited = remote.parse_wait(result.stdout, result.stderr)
        except AcceptanceError:
            waited = None
        return HostOutcome(command, handle.submitted, datetime.now(UTC), waited, timed_out=True)

    def learn_hostnames(self, nodes: Sequence[str], known: Mapping[str, str] | None = None) -> None:
        """Ask the nodes not known yet for their hostname (`known`: names learnt elsewhere, e.g. the inventory)."""
        self.hostnames.update(known or {})
        missing = [n for n in dict.fromkeys(nodes) if n not in self.hostnames and n in self.hosts.connections]
        if not missing:
            return
        for node, answer in self.hosts.each(missing, self.hosts.script("hostname", 30), 40).items():
            if not isinstance(answer, BaseException) and answer.stdout.strip():
                self.hostnames[node] = answer.stdout.strip().splitlines()[0]
