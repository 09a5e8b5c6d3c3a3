"""What each host said about a workload → one `WorkloadResult` (pure).

The MAIN host's stdout is the workload's output (the head node's ``mpirun`` for an MPI run);
every host's stderr, and the other hosts' stdout, are kept as `streams`. Each host adds two
events (started, ended with its exit status and time) for the evidence folder. A failure is
said in the launcher's own words where it has some (`mpi.launcher_reason`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from acceptance.clusters.base import Handle, RunStatus, WorkloadResult, workload_kind, workload_nodes
from acceptance.clusters.ssh.mpi import launcher_reason
from acceptance.clusters.ssh.plans import MAIN, HostCommand
from acceptance.clusters.ssh.remote import WaitOutput

LOG_TAIL_LINES = 50
TIMEOUT_EXIT = 124  # GNU timeout: the command's deadline passed


@dataclass(frozen=True)
class HostOutcome:
    """How one host command ended, as far as the harness could follow it."""

    command: HostCommand
    started: datetime | None
    finished: datetime | None
    output: WaitOutput | None
    error: str | None = None
    timed_out: bool = False


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _took(o: HostOutcome) -> str:
    if o.started and o.finished:
        return f" after {(o.finished - o.started).total_seconds():.1f} s"
    return ""


def _failure(o: HostOutcome, mpi_run: bool) -> str:
    """One line on why one host's command failed."""
    where = f"{o.command.node}"
    if o.error:
        return o.error
    if o.timed_out:
        return f"no exit on {where} within {o.command.deadline_s:.0f} s; its processes were ended"
    out = o.output
    if out is None or out.gone:
        return f"the workload's folder {o.command.folder} on {where} is gone (never started, or cleaned up)"
    if out.exit_code is None:
        return f"killed on {where} before it exited"
    if out.exit_code == TIMEOUT_EXIT:
        return f"ran past its deadline ({o.command.deadline_s:.0f} s) on {where} and was ended"
    said = launcher_reason(out.stdout, out.stderr, out.exit_code) if mpi_run else ""
    said = said or _last_line(out.stderr) or _last_line(out.stdout)
    program = "mpirun" if mpi_run else "the command"
    return f"{program} on {where} exited {out.exit_code}" + (f": {said}" if said else "")


def _status(outcomes: Sequence[HostOutcome]) -> RunStatus:
    if any(o.error or o.output is None or o.output.gone for o in outcomes):
        return "error"
    if any(o.timed_out or (o.output is not None and o.output.exit_code == TIMEOUT_EXIT) for o in outcomes):
        return "timeout"
    if all(o.output is not None and o.output.exit_code == 0 for o in outcomes):
        return "succeeded"
    return "failed"


def _events(o: HostOutcome) -> list[dict[str, str]]:
    node = f"host/{o.command.node}"
    out: list[dict[str, str]] = []
    if o.started:
        out.append({"time": o.started.isoformat(), "object": node, "reason": "Started",
                    "message": f"{o.command.folder}/run.sh", "type": "Normal"})  # fmt: skip
    code = o.output.exit_code if o.output else None
    ok = o.error is None and not o.timed_out and code == 0
    message = f"exit {code}{_took(o)}" if code is not None else (o.error or "no exit status")
    stderr = _last_line(o.output.stderr) if o.output else ""
    if not ok and stderr:
        message += f"; stderr: {stderr}"
    out.append({"time": o.finished.isoformat() if o.finished else "", "object": node,
                "reason": "Exited" if code is not None else "Lost", "message": message,
                "type": "Normal" if ok else "Warning"})  # fmt: skip
    return out


def run_result(handle: Handle, outcomes: Sequence[HostOutcome], hostnames: Mapping[str, str]) -> WorkloadResult:
    """The workload's result from its hosts' outcomes (`hostnames`: node → the name its processes print)."""
    workload = handle.workload
    main = next((o for o in outcomes if o.command.role == MAIN), outcomes[0])
    status = _status(outcomes)
    reason = ""
    if status != "succeeded":
        bad = [o for o in outcomes if not (o.output and o.output.exit_code == 0 and not o.error and not o.timed_out)]
        reason = "; ".join(_failure(o, o.command.mpi) for o in (bad or outcomes)[:3])
        if len(bad) > 3:
            reason += f" (and {len(bad) - 3} more hosts)"
    out = main.output
    output = out.stdout if out else ""
    streams: dict[str, str] = {}
    for o in outcomes:
        if o.output is None:
            continue
        if o.output.stderr:
            streams[f"{o.command.node}.stderr"] = o.output.stderr
        if o is not main and o.output.stdout:
            streams[f"{o.command.node}.stdout"] = o.output.stdout
    placement = {hostnames.get(n, n): n for n in workload_nodes(workload)}
    tail = output + (out.stderr if out else "")
    starts = [o.started for o in outcomes if o.started]
    ends = [o.finished for o in outcomes if o.finished]
    return WorkloadResult(
        workload=workload.name,
        kind=workload_kind(workload),
        output=output,
        exit_code=out.exit_code if out else None,
        status=status,
        reason=reason,
        started=min(starts) if starts else None,
        finished=max(ends) if ends else None,
        placement=dict(sorted(placement.items())),
        events=tuple(e for o in outcomes for e in _events(o)),
        manifests=handle.manifests,
        log_tail="".join(tail.splitlines(keepends=True)[-LOG_TAIL_LINES:]),
        streams=streams,
    )
