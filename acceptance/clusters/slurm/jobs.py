"""``acceptance bundle --job JOBID`` on Slurm: the job as the scheduler knows it, read-only.

``scontrol -o show job`` (while the job is queued, running, or ended less than ``MinJobAge`` ago) gives its
state, ``Reason``, exit code, nodes and output files; ``scontrol -o show step`` its running steps; with
slurmdbd, ``sacct -j`` every step with its end state (NODE_FAIL, TIMEOUT ...) and, for a job that has left
the controller's memory, the job itself. Each node of the job is read with ``scontrol -o show node`` (its
state and ``Reason=``, who set it when). A node is the job's suspect when Slurm does not schedule it now,
or when the job or one of its steps ended NODE_FAIL or BOOT_FAIL there. The output files are read where the
commands run (the shared file system of the login node), their last `LOG_BYTES`.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping

from acceptance.clusters.base import JobStepState, SchedulerJob
from acceptance.clusters.slurm.reservations import Runs
from acceptance.errors import ParseError, UsageError
from acceptance.tools import slurm as tools

LOG_BYTES = 8 * 1024 * 1024
STEP_FIELDS = ("JobID", "JobName", "State", "ExitCode", "NodeList", "End")
_NODE_STATES = ("NODE_FAIL", "BOOT_FAIL")


def _nodes(value: str | None) -> tuple[str, ...]:
    return tools.hostlist(value) if value and value not in ("(null)", "None assigned", "") else ()


def read_job(run: Runs, show_nodes: Callable[[], Mapping[str, tools.Node]], reason_of: Callable[[tools.Node], str],
             job_id: str) -> SchedulerJob:  # fmt: skip
    """The job `job_id` (see the module docstring); UsageError when neither scontrol nor sacct knows it."""
    if not job_id.replace("_", "").isdigit():
        raise UsageError(f"--job {job_id!r}: on Slurm --job is a job id (digits, or ARRAY_TASK as 123_4)")
    raw: dict[str, str] = {}
    notes: list[str] = []
    shown = run(["scontrol", "-o", "show", "job", job_id])
    raw["scontrol -o show job"] = shown.stdout + shown.stderr
    records = tools.parse_records(shown.stdout, "JobId")[0] if shown.ok else ()
    steps: list[JobStepState] = []
    acct = run(["sacct", "--parsable2", "--noheader", "--jobs", job_id, f"--format={','.join(STEP_FIELDS)}"])
    raw["sacct"] = acct.stdout + acct.stderr
    rows: tuple[tools.AcctRow, ...] = ()
    if acct.ok and acct.stdout.strip():
        try:
            rows = tools.parse_sacct(acct.stdout, "sacct", STEP_FIELDS)[0]
        except ParseError as exc:
            notes.append(f"sacct -j {job_id}: {exc}")
    elif not acct.ok:
        notes.append(f"the job's steps that ended are not known: sacct answers {acct.said(200)}")
    job_row = next((r for r in rows if r.step is None), None)
    if not records and job_row is None:
        said = (shown.stderr or shown.stdout).strip() or "no record"
        raise UsageError(f"--job {job_id}: Slurm does not know the job (scontrol: {said}; sacct: "
                         f"{'no row' if acct.ok else acct.said(200)})")  # fmt: skip
    for row in rows:
        if row.step is not None:
            steps.append(JobStepState(row.step, row.get("JobName"), row.state, row.get("ExitCode"),
                                      _nodes(row.get("NodeList")), row.get("End")))  # fmt: skip
    live = run(["scontrol", "-o", "show", "step", job_id])
    raw["scontrol -o show step"] = live.stdout + live.stderr
    known = {s.step for s in steps}
    for rec in tools.parse_records(live.stdout, "StepId")[0] if live.ok else ():
        step_id = rec.get("StepId", "").partition(".")[2]
        if step_id and step_id not in known:
            steps.append(
                JobStepState(step_id, rec.get("Name", ""), rec.get("State", ""), "", _nodes(rec.get("NodeList")))
            )
    rec = records[0] if records else {}
    nodes = _nodes(rec.get("NodeList")) or (_nodes(job_row.get("NodeList")) if job_row else ())
    state = rec.get("JobState") or (job_row.state if job_row else "")
    known_nodes = show_nodes() if nodes else {}
    node_states: dict[str, str] = {}
    bad: dict[str, str] = {}
    for node in nodes:
        info = known_nodes.get(node)
        node_states[node] = reason_of(info) if info is not None else "not listed by scontrol show node"
        if info is None or not info.state.usable:
            bad[node] = node_states[node]
    for step in steps:
        if step.state in _NODE_STATES:
            for node in step.nodes:
                bad.setdefault(node, f"step {step.step} of job {job_id} ended {step.state}")
    if state in _NODE_STATES and len(nodes) == 1:
        bad.setdefault(nodes[0], f"job {job_id} ended {state}")
    logs = _outputs(run, rec, job_id, notes)
    return SchedulerJob(job_id=job_id, name=rec.get("JobName") or (job_row.get("JobName") if job_row else ""),
                        state=state, reason=rec.get("Reason", ""),
                        exit_code=rec.get("ExitCode") or (job_row.get("ExitCode") if job_row else ""), nodes=nodes,
                        batch_host=rec.get("BatchHost") or None, steps=tuple(steps), node_states=node_states,
                        bad_nodes=bad, logs=logs, notes=tuple(notes), raw=raw)  # fmt: skip


def _outputs(
    run: Runs, rec: Mapping[str, str], job_id: str, notes: list[str]
) -> tuple[tuple[str, str, str | None], ...]:
    """The job's StdOut and StdErr files (one when they are the same), as (label, text, host)."""
    if not rec:
        notes.append(f"job {job_id} has left the controller's memory: its output files are not known (--job-logs)")
        return ()
    host = rec.get("BatchHost") or None
    out = []
    for path in dict.fromkeys(p for p in (rec.get("StdOut"), rec.get("StdErr")) if p and p != "(null)"):
        answer = run(f"tail -c {LOG_BYTES} {shlex.quote(path)}")
        if answer.ok:
            out.append((f"slurm-job/{job_id}:{path}", answer.stdout, host))
        else:
            notes.append(f"job {job_id}'s output {path} could not be read: {answer.said(200)}")
    return tuple(out)
