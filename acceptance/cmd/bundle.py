"""`acceptance bundle`: the first message of an incident, as a signed folder and archive.

    acceptance bundle --cluster NAME --job-logs PATH... [--job LABEL_SELECTOR [--namespace NS] | --job JOBID]
                      [--evidence [HOST=]PATH...] [--around TIME] [--ticket ID] [--out DIR]
                      [--sign-key KEY | --no-sign] [--allow-unredacted FILE] [--json]

Every field is derived from the evidence (see `acceptance.incident`): the job's logs (files or
folders; on Kubernetes also the pods of ``--job``, on Slurm the output files of job ``--job``), evidence
files (kernel logs, ``nvidia-smi -q``, ``kubectl describe`` pastes; ``HOST=PATH`` says whose), the cluster
(node conditions and events of the affected nodes, on Kubernetes; the job's nodes, steps, states and
Reasons, on Slurm), the profile (provider identifiers, severity levels), the latest
baseline and the latest signed acceptance report (change log). Exit 0 when the bundle was written
(even with fields missing: it says which), 1 when it was not signed because a file still holds a value
that looks like a credential (it says which file and line; ``--allow-unredacted FILE`` for a false
positive), 2 for a usage error.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import threading
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from acceptance import __version__, clusters
from acceptance.clusters.base import ClusterInventory, HostEvidence, JobLogs, SchedulerJob, SchedulerJobs
from acceptance.cmd import bundle_sources as src
from acceptance.errors import AcceptanceError, UsageError
from acceptance.incident import assemble, changes, nodes
from acceptance.incident.inputs import Input, Parsed, parse_input
from acceptance.incident.severity import SeverityPolicy
from acceptance.profile import Profile, load_profile
from acceptance.report.bundle import add_input, default_folder, open_folder, write_bundle
from acceptance.report.folder import ReportFolder
from acceptance.report.sign import SignOptions


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "bundle",
        help="assemble the first message of an incident: a signed bundle of the evidence",
        description=__doc__.split("\n\n", 2)[2] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--cluster", required=True, help="the cluster's profile: baselines/NAME/cluster.yaml")
    parser.add_argument("--baselines-dir", type=Path, default=Path("baselines"), metavar="DIR")
    parser.add_argument("--job-logs", nargs="+", action="extend", default=[], metavar="PATH",
                        help="the job's logs (files or folders); may be given several times")  # fmt: skip
    parser.add_argument("--job", metavar="LABEL_SELECTOR|JOBID",
                        help="Kubernetes: read the job's pods (logs, placement); Slurm: the job by id")  # fmt: skip
    parser.add_argument("--namespace", help="the job's namespace (default: the profile's kube.namespace)")
    parser.add_argument(
        "--evidence",
        nargs="+",
        action="extend",
        default=[],
        metavar="[HOST=]PATH",
        help="kernel logs (dmesg, journal), nvidia-smi -q, kubectl output; HOST= says which machine; "
        "may be given several times",
    )
    parser.add_argument("--around", metavar="TIME", help="UTC time near the incident, when the logs hold several")
    parser.add_argument("--ticket", help="the incident's ticket (a later acceptance run with it reports the clocks)")
    parser.add_argument("--out", type=Path, metavar="DIR", help="the bundle folder (default under --reports-dir)")
    parser.add_argument("--reports-dir", type=Path, default=Path("reports"), metavar="DIR")
    parser.add_argument("--log-utc-offset", default="+00:00", metavar="+HH:MM", help="the logs' clock (default UTC)")
    sign = parser.add_mutually_exclusive_group()
    sign.add_argument("--sign-key", type=Path, metavar="KEY", help="SSH key to sign with (default: the ssh-agent)")
    sign.add_argument("--no-sign", action="store_true", help="write the bundle unsigned")
    parser.add_argument(
        "--allow-unredacted",
        action="append",
        default=[],
        metavar="FILE",
        help="sign the bundle although this file of it (relative to the bundle folder, e.g. "
        "evidence/inputs/01-train.log) holds a value that looks like a credential (a false positive); "
        "the manifest says so",
    )
    parser.add_argument("--json", action="store_true", help="print bundle.json on standard output")
    parser.set_defaults(func=_run)


def _cluster_answers(
    profile: Profile, args: argparse.Namespace, gathered: src.Gathered, run_id: str
) -> tuple[JobLogs | None, ClusterInventory | None, Any, SchedulerJob | None]:
    """The job (its pods, or the scheduler's job), the inventory and an open cluster (for events), as far as
    the backend allows."""
    backend = clusters.backend_of(profile)
    if not backend.reads_incident:
        if args.job:
            raise UsageError(
                f"--job reads a job from the cluster (Kubernetes pods by label, a Slurm job by id); cluster "
                f"{profile.name} uses {backend.describe()}: "
                "give the job's logs with --job-logs (and kernel logs, nvidia-smi -q with --evidence HOST=PATH)"
            )
        gathered.notes.append(
            f"field 6: {backend.describe()}: Kubernetes events and node conditions are not "
            "read; kernel logs and nvidia-smi -q come from --evidence HOST=PATH"
        )
        return None, None, None, None
    try:
        cluster = clusters.open(profile, run_id)
    except UsageError as exc:
        if args.job:
            raise
        gathered.notes.append(f"field 6: the cluster could not be reached: {exc}")
        return None, None, None, None
    job = inventory = sched = None
    try:
        if args.job and isinstance(cluster, SchedulerJobs):  # a job id the scheduler knows (Slurm)
            sched = cluster.scheduler_job(args.job)
            src.scheduler_job_inputs(sched, gathered)
        elif args.job:  # SSH hosts have no pods: the backend says so (a usage error)
            job = cluster.job_logs(args.job, args.namespace)
            src.job_inputs(job, gathered)
        inventory = cluster.inventory()
    except AcceptanceError as exc:
        if args.job and job is None and sched is None:
            cluster.close()
            raise UsageError(f"--job {args.job}: {exc}") from None
        gathered.notes.append(f"field 6: the cluster did not answer: {exc}")
    return job, inventory, cluster, sched


def _host_evidence(cluster: Any, names: list[str], gathered: src.Gathered) -> list[Input]:
    """SSH hosts: the kernel log and ``nvidia-smi -q`` of each affected host that no ``--evidence`` covers."""
    covered = {i.host for i in gathered.inputs if i.origin == "evidence"}
    wanted = [n for n in names if n not in covered]
    if not isinstance(cluster, HostEvidence) or not wanted:
        return []
    try:
        found, missing = cluster.host_evidence(wanted)
    except AcceptanceError as exc:
        gathered.notes.append(f"field 6: the affected hosts' kernel logs and nvidia-smi -q could not be read: {exc}")
        return []
    gathered.notes.extend(f"field 6: {m}" for m in missing)
    read = [Input(f"ssh://{node}/{name}", text, node, "evidence") for node, texts in found.items()
            for name, text in sorted(texts.items())]  # fmt: skip
    gathered.inputs.extend(read)
    return read


def _node_answers(
    cluster: Any, inventory: ClusterInventory | None, affected: list[str], since: datetime, notes: list[str]
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]], dict[str, int]]:
    conditions: dict[str, list[dict[str, Any]]] = {}
    events: dict[str, list[dict[str, Any]]] = {}
    allocatable: dict[str, int] = {}
    if inventory is not None:
        for name in affected:
            info = inventory.node(name)
            if info is None:
                continue
            conditions[name] = [nodes.condition(k, v) for k, v in sorted(info.conditions.items())]
            allocatable[name] = info.allocatable_gpus
    if cluster is not None and affected:
        try:
            for ev in cluster.events(affected, since.replace(tzinfo=UTC)):
                events.setdefault(ev.object.split("/", 1)[-1], []).append(ev.as_dict())
        except AcceptanceError as exc:
            notes.append(f"field 6: node events could not be read: {exc}")
    return conditions, events, allocatable


def _parse(item: Input, around: datetime | None, created: datetime) -> Parsed:
    year, source = src.year_of(item, around, created)
    return parse_input(item, year=year, year_from=f"{year} from {source}")


@dataclass(frozen=True)
class _Read:
    """What is kept of one input once it is read, parsed and copied: its text is let go."""

    parsed: Parsed
    copy: str  # the evidence copy's path relative to the bundle folder
    copy_sha256: str | None  # of the bytes written through the scrub (None: written otherwise, searched again)
    cuda: str | None
    notes: tuple[str, ...]


def _read_one(item: Input, n: int, folder: Path, around: datetime | None, created: datetime) -> _Read:
    """Read the `n`-th input (a file only now), parse it and copy it scrubbed into the bundle's evidence."""
    notes: list[str] = []
    item = src.loaded(item, notes)
    parsed = _parse(item, around, created)
    out = ReportFolder(folder)
    path = add_input(out, n, item.label, item.text)
    rel = path.relative_to(folder).as_posix()
    return _Read(parsed, rel, out.scrubbed.get(rel), src.cuda_line(item.text), tuple(notes))


PARALLEL_BYTES = 64 << 20  # inputs of more bytes than this (a big job's per-node logs) are read by a process pool


def _workers(items: list[Input]) -> int:
    """How many processes read `items`: one (this process) unless they are big and there are cores to share.
    Forked, so only from a process that runs no other thread (a lock held by one would stay held in a child)."""
    size = 0
    for item in items:
        try:
            size += Path(item.path).stat().st_size if item.path else len(item.text)
        except OSError:
            continue
    forkable = "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1
    if size <= PARALLEL_BYTES or len(items) < 2 or not forkable:
        return 1
    return max(1, min(len(items), len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1, 16))


class _Reader:
    """Each input in turn: read (a file only now), parsed, copied scrubbed into the bundle's evidence, let go
    (memory stays flat); big inputs are shared out among processes, the results taken in the inputs' order.
    What is kept of the texts is the first CUDA banner line (the change log's `now`)."""

    def __init__(self, out: ReportFolder, around: datetime | None, created: datetime, notes: list[str]) -> None:
        self.out, self.around, self.created, self.notes = out, around, created, notes
        self.copied = 0
        self.cuda: list[str] = []

    def __call__(self, items: list[Input]) -> list[Parsed]:
        numbers = range(self.copied + 1, self.copied + 1 + len(items))
        self.copied += len(items)
        args = (items, numbers, [self.out.path] * len(items), [self.around] * len(items), [self.created] * len(items))
        workers = _workers(items)
        if workers > 1:
            context = multiprocessing.get_context("fork")
            with ProcessPoolExecutor(workers, mp_context=context) as pool:
                done = list(pool.map(_read_one, *args))
        else:
            done = list(map(_read_one, *args))
        for read in done:
            if read.copy_sha256 is not None:
                self.out.scrubbed[read.copy] = read.copy_sha256
            self.notes.extend(read.notes)
            if not self.cuda and read.cuda:
                self.cuda.append(read.cuda)
        return [read.parsed for read in done]


def _run(args: argparse.Namespace) -> int:
    created = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
    profile = load_profile(args.cluster, args.baselines_dir)
    offset = src.parse_offset(args.log_utc_offset)
    around = src.parse_time(args.around, "--around") if args.around else None
    if not args.job_logs and not args.job:
        raise UsageError("give the job's logs: --job-logs PATH... (files or folders), or --job LABEL_SELECTOR")
    gathered = src.Gathered()
    src.read_files(args.job_logs, "file", gathered)
    src.read_files(args.evidence, "evidence", gathered)
    run_id = f"ra-bundle-{created:%Y%m%d%H%M%S}"
    job, inventory, cluster, sched = _cluster_answers(profile, args, gathered, run_id)
    folder = args.out or default_folder(args.reports_dir, profile.name, args.ticket, created)
    try:
        opened = open_folder(folder)
        reader = _Reader(opened, around, created, gathered.notes)
        parsed = reader(gathered.inputs)
        refs, baseline = src.references(profile, args.reports_dir, gathered.notes)
        full = (
            len(baseline.baseline.conditions.nodes) * baseline.baseline.conditions.node_spec.gpus_per_node
            if baseline is not None
            else None
        )
        ctx = assemble.Context(
            cluster=profile.name,
            created=created,
            nodes=profile.nodes,
            gpus_per_node=profile.gpus_per_node,
            provider=profile.provider,
            full_size=full,
            full_size_from=str(baseline.path) if baseline else "",
            policy=SeverityPolicy.from_profile(profile.severity, profile.coverage),
            ticket=args.ticket,
            harness_version=__version__,
            simulated=clusters.backend_of(profile).simulated or bool(job and inventory and inventory.simulated),
            offset=offset,
            around=around,
            placement=job.placement if job else {n: n for n in sched.nodes} if sched else {},
            workers=src.workers(job),
            slots=profile.gpus_per_node,
        )
        found = src.with_job_suspects(assemble.findings(parsed, ctx), sched)
        names = [a.node for a in found.affected if a.is_cluster_node]
        read = _host_evidence(cluster, names, gathered)
        if read:  # the affected hosts' own kernel log and nvidia-smi -q: findings again, with them
            parsed += reader(read)
            found = src.with_job_suspects(assemble.findings(parsed, ctx), sched)
            names = [a.node for a in found.affected if a.is_cluster_node]
        conds, events, alloc = _node_answers(cluster, inventory, names, created - timedelta(hours=24), gathered.notes)
        for node, said in (sched.node_events() if sched else {}).items():
            if node in names:
                events.setdefault(node, []).extend(e.as_dict() for e in said)
        evidence = nodes.node_evidence(found.affected, parsed, conds, events, alloc)
        now = src.now_state(job, found.nccl.nccl_versions, reader.cuda, inventory)
        log = changes.changelog(now, refs, created)
        bundle = assemble.bundle(parsed, found, ctx, evidence, log, gathered.notes)
    finally:
        if cluster is not None:
            cluster.close()
    sign = SignOptions.from_options(no_sign=args.no_sign, sign_key=args.sign_key, environ=os.environ)
    cluster_files: dict[str, Any] = {}
    if job is not None:
        cluster_files["job-pods"] = [
            {
                "name": p.name,
                "node": p.node,
                "hostname": p.hostname,
                "phase": p.phase,
                "labels": dict(p.labels),
                "containers": [
                    {
                        "name": c.name,
                        "image": c.image,
                        "image_id": c.image_id,
                        "command": list(c.command),
                        "env": dict(c.env),
                        "state": c.state,
                        "reason": c.reason,
                        "exit_code": c.exit_code,
                    }
                    for c in p.containers
                ],
            }
            for p in job.pods
        ]
        cluster_files["job-events"] = [e.as_dict() for e in job.events]
    if sched is not None:
        cluster_files["slurm-job"] = {**sched.to_json(), "commands": dict(sched.raw)}
    if inventory is not None:
        cluster_files["nodes"] = [
            {"name": n.name, "ready": n.ready, "conditions": dict(n.conditions), "allocatable_gpus": n.allocatable_gpus}
            for n in inventory.nodes
        ]
    written = write_bundle(
        bundle,
        folder,
        (),
        cluster_files,
        sign,
        secrets=profile.secret_values(),
        allow_unredacted=args.allow_unredacted,
        opened=opened,
    )
    if args.json:
        json.dump(json.loads(written.document.read_text(encoding="utf-8")), sys.stdout, indent=2)
        sys.stdout.write("\n")
    stream = sys.stderr if args.json else sys.stdout
    level = bundle.severity.level or "none proposed"
    print(
        f"severity: {level}; affected: {', '.join(a.node for a in bundle.cluster.affected[:3]) or 'none named'}; "
        f"{len(bundle.missing)} item(s) missing",
        file=stream,
    )
    for line in written.lines():
        print(line, file=stream)
    if written.refused:
        print(f"acceptance bundle: the bundle holds credential-looking values: {written.refused}", file=sys.stderr)
        return 1
    return 0
