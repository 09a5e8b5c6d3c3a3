"""The Slurm backend: the scheduler's own commands, run here or on the login node (`transport`).

Inventory (criterion 0) from ``scontrol -o show node``: a node that Slurm drains, marks down or
not responding, or that is outside the profile's partition, is not Ready, with Slurm's ``Reason=``
and who set it and when; the GPU facts of the usable nodes come from one ``srun`` step per node
(the SSH backend's inventory script). Workloads are ``sbatch`` jobs (`commands`), awaited with
``squeue`` against their deadline; a job still PENDING past ``slurm.pending_timeout`` (or the
wait's deadline) is cancelled and its result says the scheduler's pending reason. `cleanup`
``scancel``s every job of the run and checks that none remains; `leftovers` are this user's jobs
whose name and comment carry another run id of this harness (never another user's, never a job
that is not ours).
"""

from __future__ import annotations

import contextlib
import dataclasses
import shlex
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from acceptance.clusters.base import (
    NODE_NOT_READY,
    ClusterEvent,
    ClusterInventory,
    Handle,
    JobLogs,
    Leftover,
    NodeInfo,
    ProgressSink,
    SchedulerJob,
    Workload,
    WorkloadProgress,
    WorkloadResult,
    workload_kind,
)
from acceptance.clusters.slurm import commands, jobs, reservations, signals
from acceptance.clusters.slurm.stream import JobStreams
from acceptance.clusters.slurm.transport import Answer, Transport
from acceptance.clusters.ssh import inventory as host_inventory
from acceptance.errors import ClusterError, ParseError, UsageError
from acceptance.profile import Profile, SlurmSettings
from acceptance.tools import slurm as tools

POLL_S = 1.0
FIRST_POLL_S = 0.1  # the queue is looked at soon after a submission, then ever less often, up to POLL_S


def poll_delay(polls: int) -> float:
    """The wait before the next look at the queue: a short job is seen gone soon, a long one costs one squeue a
    second (0.1, 0.2, 0.4, 0.8, then 1 s)."""
    return min(POLL_S, FIRST_POLL_S * float(2 ** min(polls, 16)))


QUEUE_RETRIES = 5  # squeue failing this many times in a row while awaiting jobs: they are lost (an error result)
LEASE_S = 90.0  # renewed every third of this while the run works; a crashed run's jobs are leftovers after it
CANCEL_WAIT_S = 60.0
_SPLIT = "@@recovery-acceptance@@"


def node_reason(node: tools.Node) -> str:
    """``Slurm state DRAIN: Reason=... (set by USER at TIME)`` for a node that is not usable."""
    said = f"Slurm state {node.state}"
    if node.reason:
        who = f" (set by {node.reason_user}" + (f" at {node.reason_time}" if node.reason_time else "") + ")"
        said += f": Reason={node.reason}" + (who if node.reason_user else "")
    return said


def not_usable(node: tools.Node, partition: str | None) -> str | None:
    """Why Slurm would not run the acceptance on `node` (None: it would)."""
    if not node.state.usable:
        return node_reason(node)
    if partition and node.partitions and partition not in node.partitions:
        return f"not in partition {partition} (Slurm lists it in {', '.join(node.partitions)})"
    return None


class SlurmCluster:
    """The nodes of the profile as Slurm schedules them (see module docstring)."""

    def __init__(self, profile: Profile, run_id: str, transport: Transport, settings: SlurmSettings) -> None:
        self.profile = profile
        self.run_id = run_id
        self.transport = transport
        self.settings = settings
        self.opts = commands.JobOptions(run_id=run_id, run_dir=settings.run_dir, partition=settings.partition,
                                        account=settings.account, reservation=settings.reservation,
                                        launch=settings.launch, mpi=settings.mpi,
                                        time_slack_s=settings.time_slack_s)  # fmt: skip
        self._launch_errors: dict[str, str] = {}
        self._cleaned = False
        self._outputs: list[str] = []
        self._stop = threading.Event()
        self._lease: threading.Thread | None = None
        self.streams = JobStreams(self._run, transport.where)

    # ------------------------------------------------------------ commands
    def _run(self, argv: Sequence[str] | str, timeout_s: float | None = None) -> Answer:
        command = argv if isinstance(argv, str) else shlex.join(argv)
        return self.transport.run(command, timeout_s or self.settings.command_timeout_s)

    def _must(self, argv: Sequence[str] | str, what: str, timeout_s: float | None = None) -> Answer:
        answer = self._run(argv, timeout_s)
        if not answer.ok:
            raise ClusterError(f"{what} on {self.transport.where}: {answer.said()}")
        return answer

    def _show_nodes(self) -> dict[str, tools.Node]:
        answer = self._must(["scontrol", "-o", "show", "node"], "the Slurm controller does not answer")
        try:
            return tools.parse_nodes(answer.stdout, "scontrol -o show node").by_name()
        except ParseError as exc:
            raise ClusterError(f"scontrol -o show node: {exc}") from None

    def _jobs(self) -> list[tools.Job]:
        """This user's jobs in the queue."""
        answer = self._must([*commands.squeue_argv(), "--me"], "squeue")
        if not answer.stdout.strip():
            return []
        try:
            return list(tools.jobs(tools.parse_squeue(answer.stdout, tools.JOB_FORMAT, "squeue")))
        except ParseError as exc:
            raise ClusterError(f"squeue: {exc}") from None

    # ------------------------------------------------------------ Cluster protocol
    def describe(self) -> list[str]:
        s = self.settings
        where = f"partition {s.partition}" if s.partition else "the default partition"
        account = f", account {s.account}" if s.account else ""
        return [f"Slurm on {self.transport.where}: {len(self.profile.nodes)} nodes in {where}{account}; "
                f"nccl-tests and the smoke job launched with {s.launch}"
                + (f" --mpi={s.mpi}" if s.launch == "srun" else "")]  # fmt: skip

    def attach_info(self) -> dict[str, str]:
        return {}

    def workload_env(self) -> Mapping[str, str]:
        return self.settings.env

    def inventory(self) -> ClusterInventory:
        version = self._must(["scontrol", "--version"], "scontrol --version").stdout.strip() or "slurm (unknown)"
        known = self._show_nodes()
        held = reservations.read_blocked(self._run, known, [n for n in self.profile.nodes if n in known],
                                         self.settings.reservation)  # fmt: skip
        usable: list[str] = []
        infos: dict[str, NodeInfo] = {}
        for name in self.profile.nodes:
            node = known.get(name)
            if node is None:
                continue  # the preflight: "not in the cluster"
            why = not_usable(node, self.settings.partition) or held.get(name)
            if why is None:
                usable.append(name)
            else:
                infos[name] = NodeInfo(name, False, node.state.drained, {"Ready": why, "Slurm": str(node.state)},
                                       node.gpus, _labels(node), version, "")  # fmt: skip
        facts, problem = self._facts(usable, version) if usable else ({}, "")
        for name in usable:
            node = known[name]
            got = facts.get(name)
            if got is None:
                said = problem or "its inventory step printed nothing"
                infos[name] = NodeInfo(name, False, False, {"Ready": f"srun on {name}: {said}"}, node.gpus,
                                       _labels(node), version, "")  # fmt: skip
                continue
            base = host_inventory.node_info(name, got, server_version=version, host_key="", launcher=None)
            gpus = min(node.gpus, base.allocatable_gpus)
            infos[name] = NodeInfo(name, base.ready, False, {**base.conditions, "Slurm": str(node.state)}, gpus,
                                   {**base.labels, **_labels(node)}, version, base.os_image,
                                   base.kernel_version)  # fmt: skip
        return ClusterInventory(server_version=version, nodes=tuple(infos[n] for n in self.profile.nodes if n in infos))

    def _facts(self, nodes: Sequence[str], version: str) -> tuple[dict[str, host_inventory.HostFacts], str]:
        """Each usable node's facts, from one step per node of one job (``srun --label``, a task per node)."""
        script = f'echo {_SPLIT}; echo "$SLURMD_NODENAME"\n' + host_inventory.inventory_script(None)
        argv = ["srun", f"--job-name={commands.job_name(self.run_id, 'inventory')}", f"--comment={self.run_id}",
                "--time=5", f"--nodelist={','.join(nodes)}", f"--nodes={len(nodes)}", "--ntasks-per-node=1",
                "--label", "--immediate=60", "--kill-on-bad-exit=0"]  # fmt: skip
        answer = self._run([*argv, *commands.placement(self.opts), "bash", "-c", script], 180)
        by_task: dict[str, list[str]] = {}
        for line in answer.stdout.splitlines():
            task, sep, text = line.partition(": ")
            if sep and task.strip().isdigit():
                by_task.setdefault(task.strip(), []).append(text)
        out: dict[str, host_inventory.HostFacts] = {}
        for lines in by_task.values():
            if len(lines) >= 2 and lines[0] == _SPLIT:
                out[lines[1].strip()] = host_inventory.parse_facts("\n".join(lines[2:]))
        return out, "" if answer.ok else answer.said()

    # ------------------------------------------------------------ workloads
    def submit(self, workloads: Sequence[Workload]) -> list[Handle]:
        names = [w.name for w in workloads]
        if len(set(names)) != len(names):
            raise UsageError(f"workload names must be unique within a submission: {names}")
        handles = []
        for w in workloads:
            job = commands.plan(self.opts, w, self.settings.env)
            self._outputs.append(job.output)
            lease = commands.lease_command(self.settings.run_dir, self.run_id, LEASE_S)
            answer = self._run(f"{lease} && {commands.submit_command(job)}")
            job_id = commands.job_id_of(answer.stdout) if answer.ok else None
            if job_id is None:
                said = dataclasses.replace(answer, command=shlex.join(job.argv)).said()
                self._launch_errors[w.name] = f"sbatch refused the job: {said}"
            manifest: dict[str, Any] = {"kind": "SlurmJob", "workload": w.name, "run_id": self.run_id,
                                        "job_id": job_id, "name": job.name, "argv": list(job.argv),
                                        "script": job.script, "output": job.output, "nodes": list(job.nodes),
                                        "where": self.transport.where}  # fmt: skip
            handles.append(Handle(w, (("slurm-job", job_id or "not submitted"),), (manifest,), datetime.now(UTC)))
        self._hold()
        return handles

    def _hold(self) -> None:
        """Renew the run's lease from now on, every third of it, until cleanup or close."""
        if self._lease is None and not self._stop.is_set():
            lease = commands.lease_command(self.settings.run_dir, self.run_id, LEASE_S, renew=True)

            def renew() -> None:
                while not self._stop.wait(LEASE_S / 3):
                    with contextlib.suppress(ClusterError):
                        self._run(lease, LEASE_S / 3)

            self._lease = threading.Thread(target=renew, name=f"lease-{self.run_id}", daemon=True)
            self._lease.start()

    def _release(self) -> None:
        self._stop.set()
        if self._lease is not None:
            self._lease.join(timeout=10)

    def wait(
        self, handles: Sequence[Handle], deadline_s: float, *, progress: ProgressSink | None = None
    ) -> list[WorkloadResult]:
        start = time.monotonic()
        ids = {h.workload.name: str(h.manifests[0].get("job_id") or "") for h in handles}
        seen: dict[str, tools.Job] = {}
        pending_since: dict[str, float] = {}
        ended: dict[str, tuple[str, str]] = {}  # workload → (status, reason) decided here (deadline, pending)
        open_ = {h.workload.name for h in handles
                 if ids[h.workload.name] and h.workload.name not in self._launch_errors}  # fmt: skip
        events: dict[str, list[dict[str, str]]] = {h.workload.name: [] for h in handles}
        for h in handles:
            if h.workload.name in open_:
                events[h.workload.name].append(_event("Submitted", f"job {ids[h.workload.name]}"))
        failures: list[str] = []
        polls = 0
        while open_:
            now = time.monotonic()
            try:
                queue = {j.job_id: j for j in self._jobs()}
                failures.clear()
            except ClusterError as exc:  # the controller busy or gone: asked again, then the jobs are lost
                failures.append(str(exc))
                if len(failures) < QUEUE_RETRIES:
                    time.sleep(POLL_S)
                    continue
                for name in sorted(open_):
                    ended[name] = ("error", f"lost job {ids[name]}: {failures[-1]}")
                with contextlib.suppress(ClusterError):
                    self._cancel([ids[n] for n in sorted(open_)])
                break
            for h in handles:
                name = h.workload.name
                if name not in open_:
                    continue
                job = queue.get(ids[name])
                if job is None:
                    open_.discard(name)
                    continue
                if name not in seen or seen[name].state != job.state:
                    events[name].append(
                        _event(
                            job.state.title(),
                            f"job {job.job_id} {job.state} on {job.nodes or '-'}"
                            + (f" ({job.reason})" if job.reason and job.reason != "None" else ""),
                        )
                    )
                seen[name] = job
                limit = min(deadline_s, h.workload.deadline_s)
                if job.state == "PENDING":
                    pending_since.setdefault(name, now)
                    if now - pending_since[name] > self.settings.pending_timeout_s or now - start > limit:
                        ended[name] = ("unschedulable", f"job {job.job_id} still PENDING after {now - start:.0f} s, "
                                       f"the scheduler's reason: {job.reason or 'none given'}")  # fmt: skip
                elif now - start > limit:
                    ended[name] = ("timeout", f"job {job.job_id} {job.state} past its deadline of {limit:.0f} s")
                if name in ended:
                    try:
                        self._cancel([job.job_id])
                    except ClusterError as exc:  # said in the result; cleanup tries again and says what remains
                        ended[name] = (ended[name][0], f"{ended[name][1]}; {exc}")
                    open_.discard(name)
            if progress is not None:
                progress([_progress(h, seen.get(h.workload.name), h.workload.name in open_, now - start, deadline_s)
                          for h in handles])  # fmt: skip
            if open_:
                time.sleep(poll_delay(polls))
                polls += 1
        results = [self.streams.stopped(h, self._result(h, seen.get(h.workload.name), ended.get(h.workload.name),
                                                        events[h.workload.name])) for h in handles]  # fmt: skip
        if progress is not None:
            progress([WorkloadProgress.of(h.workload, "done", time.monotonic() - start, deadline_s, status=r.status)
                      for h, r in zip(handles, results, strict=True)])  # fmt: skip
        return results

    def follow(self, handle: Handle, deadline_s: float) -> Iterator[str]:
        """`StreamsLogs`: the job's output file as it grows (`stream`)."""
        return self.streams.follow(handle, deadline_s)

    def stop(self, handle: Handle, reason: str) -> None:
        """`StreamsLogs`: ``scancel`` the job; the wait awaiting it keeps what it printed."""
        self.streams.stop(handle, reason)

    def _result(self, handle: Handle, job: tools.Job | None, ended: tuple[str, str] | None,
                events: list[dict[str, str]]) -> WorkloadResult:  # fmt: skip
        w = handle.workload
        manifest = handle.manifests[0]
        error = self._launch_errors.get(w.name)
        if error is not None or not manifest.get("job_id"):
            failed = WorkloadResult.not_run(w, error or "the job was not submitted", handle.submitted)
            return dataclasses.replace(failed, manifests=tuple(handle.manifests))
        output = str(manifest["output"])
        quoted = [shlex.quote(p) for p in (output, f"{output}.err", f"{output}.rc")]
        answer = self._run(f"cat {quoted[0]} 2>/dev/null; echo {_SPLIT}; cat {quoted[1]} 2>/dev/null; "
                           f"echo {_SPLIT}; cat {quoted[2]} 2>/dev/null")  # fmt: skip
        parts = [*answer.stdout.split(f"{_SPLIT}\n"), "", "", ""][:3]
        out, err, rc_text = parts
        rc = int(rc_text.strip()) if rc_text.strip().lstrip("-").isdigit() else None
        listed = manifest.get("nodes")
        nodes = [str(n) for n in listed] if isinstance(listed, list) else []
        if ended is not None:
            status, reason = ended
        elif rc is None:
            last = job.state if job is not None else "unknown"
            status, reason = (
                "failed",
                f"job {manifest['job_id']} ended without its exit status (last seen {last}"
                + (f", {job.reason}" if job is not None and job.reason and job.reason != "None" else "")
                + ")",
            )
        else:
            status, reason = ("succeeded", "") if rc == 0 else ("failed", f"exit {rc}")
        events.append(_event("Ended", f"{status}{': ' + reason if reason else ''}"))
        tail = "\n".join((out + err).strip().splitlines()[-40:])
        return WorkloadResult(
            workload=w.name, kind=workload_kind(w), output=out, exit_code=rc,
            status=status,  # type: ignore[arg-type]
            reason=reason, started=handle.submitted, finished=datetime.now(UTC),
            placement={n: n for n in nodes}, events=tuple(events), manifests=tuple(handle.manifests),
            log_tail=tail, streams={"stderr": err} if err.strip() else {}, launch=commands.launch_of(self.opts, w),
        )  # fmt: skip

    def _cancel(self, job_ids: Sequence[str]) -> None:
        if job_ids:
            answer = self._run(commands.scancel_argv(job_ids))
            if not answer.ok:
                raise ClusterError(f"scancel failed on {self.transport.where}: {answer.said()}")

    # ------------------------------------------------------------ node state
    def events(self, nodes: Sequence[str], since: datetime) -> list[ClusterEvent]:
        """What Slurm says of `nodes` now: drained, down or not responding, with the reason and who set it."""
        known = self._show_nodes()
        out = []
        for name in nodes:
            node = known.get(name)
            if node is not None and not node.state.usable:
                why = node_reason(node)
                out.append(ClusterEvent(datetime.now(UTC), f"node/{name}", NODE_NOT_READY, why, "Warning"))
        return out

    def node_signals(self, nodes: Sequence[str], since: datetime) -> list[ClusterEvent]:
        """The nodes' state now and what Slurm recorded since `since` (`signals`)."""
        return signals.Signals(self._run, self._show_nodes, node_reason).read(nodes, since)

    def scheduler_job(self, job_id: str) -> SchedulerJob:
        """The job `job_id` as Slurm knows it (`jobs`), for an incident bundle."""
        return jobs.read_job(self._run, self._show_nodes, node_reason, job_id)

    def job_logs(self, selector: str, namespace: str | None = None) -> JobLogs:
        raise UsageError(
            f"{self.profile.name}: a job's pods by label selector ({selector!r}) exist only on Kubernetes; on Slurm "
            "pass the job's rank logs as files (acceptance bundle --job-logs PATH ...)"
        )

    # ------------------------------------------------------------ what runs leave behind
    def _others(self) -> list[tuple[tools.Job, Leftover, float | None]]:
        """This user's jobs of other runs of this harness (their name ``ra-<run>-`` and comment ``<run>``), each
        with its run's lease (live until), and how long ago that lease ran out (None: no lease found)."""
        jobs = [(j, run) for j in self._jobs() if (run := commands.run_of(j)) is not None and run != self.run_id]
        if not jobs:
            return []
        runs = sorted({run for _, run in jobs})
        answer = self._must(commands.leases_command(self.settings.run_dir, runs), "reading the runs' leases")
        leases, now = commands.parse_leases(answer.stdout)
        out = []
        for job, run in jobs:
            expiry = leases.get(run)
            live = expiry is not None and now is not None and expiry > now
            until = datetime.fromtimestamp(expiry, UTC) if live and expiry is not None else None
            ended = float(now - expiry) if expiry is not None and now is not None and not live else None
            out.append((job, Leftover(f"slurm-job/{job.job_id} ({job.name}, {job.state})", run, until), ended))
        return out

    def leftovers(self) -> list[Leftover]:
        """This user's jobs of other runs of this harness: of live runs (a lease) and those crashed runs left."""
        return [item for _, item, _ in self._others()]

    def remove_leftovers(
        self, older_than_s: float | None, dry_run: bool = False, include_live: bool = False
    ) -> list[Leftover]:
        """``scancel`` the jobs of ended runs whose lease ran out at least `older_than_s` ago (a run without a
        lease file counts as long ended); a live run's jobs only with `include_live`."""

        def old_enough(ended: float | None) -> bool:
            return older_than_s is None or ended is None or ended >= older_than_s

        chosen = [(job, item) for job, item, ended in self._others()
                  if include_live or (item.live_until is None and old_enough(ended))]  # fmt: skip
        if chosen and not dry_run:
            self._cancel([job.job_id for job, _ in chosen])
        return [item for _, item in chosen]

    def _ours(self) -> list[tools.Job]:
        return [j for j in self._jobs() if commands.run_of(j) == self.run_id]

    def cleanup(self) -> None:
        """``scancel`` every job of this run; raise naming the jobs still in the queue a minute later."""
        if self._cleaned:
            return
        self._release()
        ours = self._ours()
        self._cancel([j.job_id for j in ours])
        deadline = time.monotonic() + CANCEL_WAIT_S
        while ours and time.monotonic() < deadline:
            time.sleep(POLL_S)
            ours = self._ours()
        if ours:
            shown = ", ".join(f"{j.job_id} ({j.name}, {j.state})" for j in ours[:5])
            raise ClusterError(f"jobs of run {self.run_id} remain after scancel: {shown}")
        if self._outputs:  # only the files this process named for its own jobs
            folder = commands.run_folder(self.settings.run_dir, self.run_id)
            files = [f"{o}{ext}" for o in self._outputs for ext in ("", ".err", ".rc")] + [f"{folder}/{commands.LEASE}"]
            engines = f"{shlex.quote(folder)}/nv-hostengine.{shlex.quote(self.run_id)}.*.pid"
            self._run(f"rm -f {' '.join(map(shlex.quote, files))} {engines}; rmdir {shlex.quote(folder)} 2>/dev/null; "
                      "true")  # fmt: skip
        self._cleaned = True

    def close(self) -> None:
        self._release()
        self.transport.close()


def _labels(node: tools.Node) -> dict[str, str]:
    labels = {"recovery-acceptance/slurm-state": str(node.state)}
    gpu = next((g for g in node.gres if g.name == "gpu"), None)
    if gpu is not None:
        labels["recovery-acceptance/slurm-gres"] = str(gpu)
    if node.partitions:
        labels["recovery-acceptance/slurm-partitions"] = ",".join(node.partitions)
    return labels


def _event(reason: str, message: str) -> dict[str, str]:
    return ClusterEvent(datetime.now(UTC), "slurm-job", reason, message).as_dict()


def _progress(
    handle: Handle, job: tools.Job | None, running: bool, elapsed: float, deadline: float
) -> WorkloadProgress:
    if not running:
        return WorkloadProgress.of(handle.workload, "done", elapsed, deadline)
    if job is None or job.state == "PENDING":
        note = job.reason if job is not None else ""
        return WorkloadProgress.of(handle.workload, "pending", elapsed, deadline, note=note)
    return WorkloadProgress.of(handle.workload, "running", elapsed, deadline)
