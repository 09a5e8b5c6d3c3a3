"""The I/O half of `acceptance bundle`: read the logs and evidence files, ask the cluster, find the references.

Every foreseeable problem (an unreadable file, a cluster that does not answer, no baseline) becomes a
note for the bundle's "missing" list; only a path that does not exist or an option that cannot be
honoured is a usage error.
"""

from __future__ import annotations

import codecs
import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from acceptance.baseline import BaselineStore, LoadedBaseline
from acceptance.baseline_trust import trust
from acceptance.clusters.base import JobLogs, SchedulerJob
from acceptance.errors import AcceptanceError, BaselineError, UsageError
from acceptance.incident.assemble import Findings
from acceptance.incident.changes import State
from acceptance.incident.inputs import Input
from acceptance.incident.model import AffectedNode, Evidence
from acceptance.profile import Profile
from acceptance.report.history import ReportSummary, latest_accepted
from acceptance.report.secrets import is_secret_name, scrub_text
from acceptance.tools import logtime

MAX_BYTES = 512 * 1024 * 1024
_CUDA = re.compile(r"NCCL version \d+\.\d+\.\d+\+cuda(\d+\.\d+)")


@dataclass
class Gathered:
    inputs: list[Input] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def year_of(item: Input, around: datetime | None, created: datetime) -> tuple[int, str]:
    """The year for an input's time stamps that carry none (c10d ``E626 ...``, glog, syslog), and its source:
    the log's own full dates, else the file's modification time, else --around, else the bundle's date."""
    own = logtime.first_year(item.text)
    if own is not None:
        return own, "the log's own full dates"
    if item.mtime is not None:
        first = logtime.parse_glog(item.text[: 1 << 20], item.mtime.year)  # the first year-less stamp
        if first is not None and first > item.mtime + timedelta(days=1):  # written before the file's last change:
            return (
                item.mtime.year - 1,
                "the file's modification time (the year before: the stamps are later in the year)",
            )
        return item.mtime.year, "the file's modification time"
    if around is not None:
        return around.year, "--around"
    return created.year, "the bundle's creation date (no date in the log, no file time, no --around)"


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and not p.name.endswith(".sig"))
    return [path]


def _tail(file: Path) -> bytes:
    """The file's bytes, its last `MAX_BYTES` when it is longer."""
    with file.open("rb") as handle:
        size = handle.seek(0, 2)
        handle.seek(max(0, size - MAX_BYTES))
        return handle.read()


def _file_notes(file: Path) -> list[str]:
    """What the bundle says about the file before it is read (read here in chunks, nothing kept): over
    `MAX_BYTES` (only its end is read), not UTF-8 throughout (undecodable bytes replaced)."""
    notes = []
    size = file.stat().st_size
    if size > MAX_BYTES:
        notes.append(f"{file}: {size} bytes, over {MAX_BYTES}: only the last {MAX_BYTES} read")
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    invalid = replacement = False
    tail = b""
    with file.open("rb") as handle:
        handle.seek(max(0, size - MAX_BYTES))
        while chunk := handle.read(1 << 24):
            replacement = replacement or b"\xef\xbf\xbd" in tail + chunk[:2] or b"\xef\xbf\xbd" in chunk
            tail = chunk[-2:]
            if not invalid:
                try:
                    decoder.decode(chunk)
                except UnicodeDecodeError:
                    invalid = True
    if not invalid:
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            invalid = True
    if invalid and not replacement:
        notes.append(f"{file}: not UTF-8 throughout; undecodable bytes were replaced")
    return notes


def loaded(item: Input, notes: list[str]) -> Input:
    """`item` with its text: a file listed by `read_files` is read now (one at a time keeps memory flat)."""
    if item.path is None:
        return item
    try:
        raw = _tail(Path(item.path))
    except OSError as exc:
        notes.append(f"{item.path}: cannot be read ({exc.strerror or exc})")
        raw = b""
    return dataclasses.replace(item, text=raw.decode("utf-8", "replace"), path=None)


def read_files(specs: Sequence[str], origin: str, gathered: Gathered) -> None:
    """``PATH`` or ``HOST=PATH`` (a file or a folder of files); a missing path is a usage error.

    Each file is listed with what must be said about it (unreadable, too long, not UTF-8); its text is
    read by `loaded`, when its turn comes."""
    for spec in specs:
        host, sep, rest = spec.partition("=")
        path = Path(rest if sep and not Path(spec).exists() else spec)
        host_name = host if sep and not Path(spec).exists() else None
        if not path.exists():
            flag = "--job-logs" if origin == "file" else "--evidence"
            raise UsageError(f"{flag} {spec}: {path} does not exist")
        for file in _files(path):
            try:
                notes = _file_notes(file)
                mtime = datetime.fromtimestamp(file.stat().st_mtime, UTC).replace(tzinfo=None)
            except OSError as exc:
                gathered.notes.append(f"{file}: cannot be read ({exc.strerror or exc})")
                continue
            gathered.notes.extend(notes)
            gathered.inputs.append(Input(str(file), "", host_name, origin, mtime, str(file)))


def job_inputs(job: JobLogs, gathered: Gathered) -> None:
    """Each pod's log as an input of the bundle (its node as the host)."""
    if not job.pods:
        gathered.notes.append(f"--job {job.selector!r}: no pod in namespace {job.namespace} matches")
    quiet = []
    for pod in job.pods:
        if pod.log is None:
            gathered.notes.append(f"pod/{pod.name}: its log could not be read (phase {pod.phase})")
        elif not pod.log.strip():
            quiet.append(pod.name)  # MPI workers (sshd) print nothing: their ranks write to the launcher's log
        else:
            gathered.inputs.append(Input(f"pod/{pod.name}", pod.log, pod.node, "pod"))
    if quiet:
        shown = ", ".join(quiet[:3]) + (", ..." if len(quiet) > 3 else "")
        gathered.notes.append(f"{len(quiet)} pod(s) of the job have an empty log ({shown})")


def scheduler_job_inputs(job: SchedulerJob, gathered: Gathered) -> None:
    """A scheduler job's output files as inputs of the bundle (the batch host as their host), and what of the
    job could not be read as notes."""
    gathered.notes.extend(f"--job {job.job_id}: {note}" for note in job.notes)
    for label, text, host in job.logs:
        gathered.inputs.append(Input(label, text, host, "file"))


def with_job_suspects(found: Findings, job: SchedulerJob | None) -> Findings:
    """`found` with the scheduler job's suspect nodes (not schedulable now, or where the job or a step ended
    NODE_FAIL) among the affected nodes, each with the scheduler's words as its evidence."""
    if job is None or not job.bad_nodes:
        return found
    affected = {a.node: a for a in found.affected}
    for node, why in job.bad_nodes.items():
        evidence = Evidence(f"slurm job {job.job_id}", None, f"{node}: {why}")
        old = affected.get(node)
        affected[node] = AffectedNode(node, (*old.reasons, evidence) if old else (evidence,))
    return dataclasses.replace(found, affected=tuple(affected.values()))


def workers(job: JobLogs | None) -> tuple[tuple[int, str], ...]:
    """(replica index, node) of an MPIJob's worker pods: rank blocks follow the hostfile's order."""
    if job is None:
        return ()
    out = []
    for pod in job.pods:
        index = pod.labels.get("training.kubeflow.org/replica-index")
        if pod.labels.get("training.kubeflow.org/job-role") == "worker" and index is not None and pod.node:
            out.append((int(index), pod.node))
    return tuple(sorted(out))


def latest_baseline(profile: Profile, notes: list[str]) -> LoadedBaseline | None:
    """The latest baseline, only once it is trusted as a run trusts it (this cluster's, signed, its chain whole)."""
    try:
        loaded = BaselineStore(profile.path.parent).latest()
        trust(loaded, profile, allow_unsigned=False)
    except BaselineError as exc:
        notes.append(f"field 7 and severity: no trusted handover baseline to compare with ({exc})")
        return None
    return loaded


def _scrubbed(env: Mapping[str, str]) -> dict[str, str]:
    return {k: "[REDACTED]" if is_secret_name(k) else scrub_text(v) for k, v in env.items()}


def cuda_line(text: str) -> str | None:
    """The NCCL banner that names the CUDA version (``NCCL version 2.21.5+cuda12.4``), the first in `text`."""
    found = _CUDA.search(text)
    return found.group(0) if found else None


def now_state(job: JobLogs | None, nccl_versions: Iterable[str], logs: Iterable[str], inventory: Any) -> State:
    """What the job and the cluster run now, as far as the evidence says (`logs`: the inputs' texts, or
    their `cuda_line`)."""
    versions: dict[str, str] = {}
    found = list(nccl_versions)
    if found:
        versions["nccl"] = found[-1]
    for text in logs:
        cuda = _CUDA.search(text)
        if cuda:
            versions["cuda"] = cuda.group(1)
            break
    nodes = None
    if inventory is not None:
        versions["kubernetes"] = str(inventory.server_version)
        drivers = {n.driver_version for n in inventory.nodes if n.driver_version}
        cudas = {n.cuda_version for n in inventory.nodes if n.cuda_version}
        if len(drivers) == 1:
            versions["driver"] = drivers.pop()
        if len(cudas) == 1 and "cuda" not in versions:
            versions["cuda"] = cudas.pop()
        nodes = tuple(sorted(n.name for n in inventory.nodes))
    images: dict[str, str] = {}
    command = env = None
    if job is not None and job.pods:
        for pod in job.pods:
            for c in pod.containers:
                digest = (c.image_id or "").rpartition("@")[2]
                images.setdefault(c.name, f"{c.image}@{digest}" if digest.startswith("sha256:") else c.image)
        launcher = next(
            (p for p in job.pods if p.labels.get("training.kubeflow.org/job-role") == "launcher"), job.pods[0]
        )
        if launcher.containers:
            command = scrub_text(" ".join(launcher.containers[0].command))
            env = _scrubbed(launcher.containers[0].env)
    return State("now", kind="now", images=images, versions=versions, command=command, env=env, nodes=nodes)


def baseline_state(loaded: LoadedBaseline) -> State:
    data = loaded.baseline.data
    c = loaded.baseline.conditions
    versions: dict[str, str] = {}
    for key, value in (
        ("driver", c.node_spec.driver_version),
        ("cuda", c.node_spec.cuda_version),
        ("kubernetes", c.kubernetes_version),
        ("gpu_product", c.node_spec.gpu_product),
    ):
        if value:
            versions[key] = str(value)
    nccl = {
        str(v.get("nccl_version")) for v in (data["conditions"].get("nccl") or {}).values() if v.get("nccl_version")
    }
    if len(nccl) == 1:
        versions["nccl"] = nccl.pop()
    recorded = str(data["provenance"].get("recorded_utc", ""))
    when = None
    if recorded:
        try:
            when = datetime.fromisoformat(recorded.replace("Z", "+00:00")).replace(tzinfo=None)
        except ValueError:
            when = None
    return State(
        f"baseline {loaded.path.name}",
        when,
        "baseline",
        versions=versions,
        nodes=tuple(c.nodes),
        extra={"path": str(loaded.path), "sha256": loaded.sha256},
    )


def report_state(report: ReportSummary) -> State:
    prov = report.provenance
    cond = prov.get("conditions") or {}
    versions = {
        k: str(cond[k]) for k in ("driver_version", "cuda_version", "kubernetes_version", "gpu_product") if cond.get(k)
    }
    versions = {k.removesuffix("_version"): v for k, v in versions.items()}
    smoke = report.smoke
    return State(
        f"acceptance report {report.folder.name}",
        report.end_utc or report.start_utc,
        "report",
        images={"smoke": str(smoke["image"])} if smoke.get("image") else {},
        versions=versions,
        command=smoke.get("command"),
        env=_scrubbed(smoke.get("env") or {}) or None,
        extra={"path": str(report.folder), "ticket": str(report.ticket or ""), "verified": "true"},
    )


def references(profile: Profile, reports_root: Path, notes: list[str]) -> tuple[list[State], LoadedBaseline | None]:
    out: list[State] = []
    loaded = latest_baseline(profile, notes)
    if loaded is not None:
        out.append(baseline_state(loaded))
    try:
        report, skipped = latest_accepted(reports_root, profile.name)
    except (OSError, AcceptanceError) as exc:
        report, skipped = None, [f"{reports_root}: {exc}"]
    if report is not None:
        out.append(report_state(report))
    else:
        why = f" (passed over: {'; '.join(skipped[:3])})" if skipped else ""
        notes.append(f"field 7: no signed, passing acceptance report of {profile.name} under {reports_root}{why}")
    return out, loaded


def parse_time(text: str, flag: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{flag} {text!r}: expected an ISO date-time such as 2026-11-23T18:50:00Z") from None
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


def parse_offset(text: str) -> timedelta:
    match = re.fullmatch(r"([+-])(\d{1,2}):?(\d{2})", text.strip())
    if not match:
        raise UsageError(f"--log-utc-offset {text!r}: expected the logs' offset from UTC such as +02:00 or -0500")
    sign = -1 if match.group(1) == "-" else 1
    return sign * timedelta(hours=int(match.group(2)), minutes=int(match.group(3)))
