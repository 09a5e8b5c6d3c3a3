"""Workload specs → Slurm command lines (pure: same input, same argv and batch script).

Every job of a run is named ``ra-<run id>-<kind>-<workload>`` and carries ``--comment=<run id>``, so
`run_of` finds the run again from ``squeue`` after a crash, and a job of another run or another
user is never taken for ours. Every job is bounded by ``--time`` (the workload's deadline plus the
profile's slack, whole minutes rounded up). DCGM is one job of one node whose one step is
``srun -w NODE -N1 -n1 --gpus-per-node=N dcgmi diag ...``; nccl-tests and the smoke job are one
allocation over their nodes (``--nodes``, ``--ntasks-per-node``, ``--gpus-per-node``) launched with
``srun --mpi=PLUGIN`` or ``mpirun`` inside it, as the profile's ``slurm.launch`` says.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from acceptance.clusters.base import DcgmWorkload, NcclWorkload, NodeWorkload, SmokeWorkload, Workload, workload_kind
from acceptance.clusters.ssh.plans import dcgm_script
from acceptance.errors import UsageError
from acceptance.tools import slurm as tools

PREFIX = "ra-"
_NAME_SAFE = re.compile(r"[^A-Za-z0-9_.+-]")


@dataclass(frozen=True)
class JobOptions:
    """What every job of a run shares: the profile's partition, account, launch and where outputs go."""

    run_id: str
    run_dir: str
    partition: str | None = None
    account: str | None = None
    reservation: str | None = None
    launch: str = "srun"
    mpi: str = "pmi2"
    time_slack_s: float = 300.0


@dataclass(frozen=True)
class JobPlan:
    """One job: the sbatch argv (the script on stdin), the script, and where its output lands."""

    workload: str
    name: str
    argv: tuple[str, ...]
    script: str
    output: str
    nodes: tuple[str, ...]


def _tag(run_id: str) -> str:
    """The run id as a name prefix: ``ra-<run id>`` (a run id that starts with ``ra-`` already is one)."""
    return run_id if run_id.startswith(PREFIX) else f"{PREFIX}{run_id}"


def job_name(run_id: str, kind: str, workload: str = "") -> str:
    """``ra-<run id>-<kind>[-<workload>]``, with characters Slurm would mangle replaced."""
    tail = f"-{_NAME_SAFE.sub('_', workload)}" if workload else ""
    return f"{_tag(run_id)}-{kind}{tail}"


def run_of(job: tools.Job) -> str | None:
    """The run id a job belongs to: its comment, when its name says it is one of ours (``ra-<comment>-``)."""
    if job.comment and job.comment != "(null)" and job.name.startswith(f"{_tag(job.comment)}-"):
        return job.comment
    return None


def time_limit(deadline_s: float, slack_s: float) -> str:
    """``--time`` in Slurm's ``D-HH:MM:SS``, the deadline plus slack rounded up to whole minutes (at least 1)."""
    minutes = max(1, math.ceil((deadline_s + slack_s) / 60))
    days, rest = divmod(minutes, 24 * 60)
    return f"{days}-{rest // 60:02d}:{rest % 60:02d}:00"


def _common(opts: JobOptions, name: str, output: str, deadline_s: float) -> list[str]:
    argv = ["sbatch", "--parsable", f"--job-name={name}", f"--comment={opts.run_id}",
            f"--time={time_limit(deadline_s, opts.time_slack_s)}", f"--output={output}", "--no-requeue",
            "--export=ALL", f"--chdir={opts.run_dir}/{opts.run_id}"]  # fmt: skip
    return argv + placement(opts)


def placement(opts: JobOptions) -> list[str]:
    """The profile's partition, account and reservation, as every job and step of the run asks for them."""
    argv = []
    if opts.partition:
        argv.append(f"--partition={opts.partition}")
    if opts.account:
        argv.append(f"--account={opts.account}")
    if opts.reservation:
        argv.append(f"--reservation={opts.reservation}")
    return argv


def _env_lines(env: Mapping[str, str]) -> list[str]:
    return [f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items())]


def _script(body: Sequence[str], env: Mapping[str, str], output: str) -> str:
    """The batch script: the environment, the launch, then its exit status into ``OUTPUT.rc`` (read by `wait`)."""
    rc = shlex.quote(f"{output}.rc")
    return "\n".join(["#!/bin/bash", "# recovery-acceptance: one workload of an acceptance run", *_env_lines(env),
                      *body, "rc=$?", f'echo "$rc" > {rc}.tmp && mv {rc}.tmp {rc}', 'exit "$rc"']) + "\n"  # fmt: skip


def step_argv(opts: JobOptions, nodes: Sequence[str], ranks_per_node: int, gpus_per_node: int,
              argv: Sequence[str]) -> list[str]:  # fmt: skip
    """The launch inside the allocation: ``srun --mpi=...`` over every node, or ``mpirun -np`` (Open MPI)."""
    if opts.launch == "mpirun":
        return ["mpirun", "--allow-run-as-root", "-np", str(len(nodes) * ranks_per_node), "--map-by",
                f"ppr:{ranks_per_node}:node", "--bind-to", "none", *argv]  # fmt: skip
    return ["srun", f"--mpi={opts.mpi}", f"--nodes={len(nodes)}", f"--ntasks-per-node={ranks_per_node}",
            f"--gpus-per-node={gpus_per_node}", "--kill-on-bad-exit=1", *argv]  # fmt: skip


def launch_of(opts: JobOptions, workload: Workload) -> str:
    """How the job's ranks start, as the baseline's conditions record it: ``srun --mpi=PLUGIN`` or ``mpirun``
    for nccl-tests and the smoke job; empty for a one-node step (DCGM, a probe), which has no such choice."""
    if not isinstance(workload, NcclWorkload | SmokeWorkload):
        return ""
    return "mpirun" if opts.launch == "mpirun" else f"srun --mpi={opts.mpi}"


def plan(opts: JobOptions, workload: Workload, env: Mapping[str, str]) -> JobPlan:
    """The job of `workload` (see the module docstring); `env` is the profile's environment for it."""
    kind = workload_kind(workload)
    name = job_name(opts.run_id, kind, workload.name)
    output = f"{opts.run_dir}/{opts.run_id}/{_NAME_SAFE.sub('_', workload.name)}.{kind}.out"
    argv = [*_common(opts, name, output, workload.deadline_s), f"--error={output}.err"]
    if isinstance(workload, DcgmWorkload | NodeWorkload):
        gpus = workload.gpus
        argv += [f"--nodelist={workload.node}", "--nodes=1", "--ntasks=1"]
        if gpus:
            argv.append(f"--gpus-per-node={gpus}")
        step = ["srun", f"--nodelist={workload.node}", "--nodes=1", "--ntasks=1"]
        step += [f"--gpus-per-node={gpus}"] if gpus else []
        if isinstance(workload, DcgmWorkload):  # the host's engine when one answers, else one for this diagnostic
            pidfile = f"nv-hostengine.{opts.run_id}.$SLURMD_NODENAME.pid"
            command = ["bash", "-c", dcgm_script(workload.argv, pidfile)]
        else:
            command = list(workload.argv)
        extra = env if isinstance(workload, NodeWorkload) else {}
        script = _script([shlex.join([*step, *command])], extra, output)
        return JobPlan(workload.name, name, tuple(argv), script, output, (workload.node,))
    assert isinstance(workload, NcclWorkload | SmokeWorkload)
    nodes = tuple(workload.nodes)
    gpus = workload.gpus_per_node
    argv += [f"--nodelist={','.join(nodes)}", f"--nodes={len(nodes)}", f"--ntasks-per-node={gpus}",
             f"--gpus-per-node={gpus}"]  # fmt: skip
    refs = sorted(k for k, v in workload.env.items() if not isinstance(v, str))
    if refs:
        raise UsageError(f"smoke env {', '.join(refs)}: a secret reference (valueFrom) needs a Kubernetes cluster; "
                         "on Slurm set the variable in the profile's slurm.env or the site's environment")  # fmt: skip
    text_env = {k: str(v) for k, v in workload.env.items()}
    body = [shlex.join(step_argv(opts, nodes, gpus, gpus, workload.argv))]
    return JobPlan(workload.name, name, tuple(argv), _script(body, {**env, **text_env}, output), output, nodes)


def squeue_argv(user: str | None = None) -> list[str]:
    """Every job in the queue (of `user`), in `tools.JOB_FORMAT`, without a header."""
    argv = ["squeue", "--noheader", "--all", f"--format={tools.JOB_FORMAT}"]
    return argv + ([f"--user={user}"] if user else [])


def scancel_argv(job_ids: Sequence[str]) -> list[str]:
    """End the jobs `job_ids` (their steps first, then the batch: ``--full`` reaches the batch script too)."""
    return ["scancel", "--full", *job_ids]


def submit_command(job: JobPlan) -> str:
    """The shell line that makes the output folder and submits `job` with its script on stdin."""
    folder = job.output.rsplit("/", 1)[0]
    return f"mkdir -p {shlex.quote(folder)} && {shlex.join(job.argv)} <<'RA_SCRIPT_END'\n{job.script}RA_SCRIPT_END\n"


LEASE = "lease"


def run_folder(run_dir: str, run_id: str) -> str:
    return f"{run_dir}/{run_id}"


def lease_command(run_dir: str, run_id: str, seconds: float, *, renew: bool = False) -> str:
    """Write the run's lease: the UTC epoch second until which the run is alive, in its folder (made first);
    `renew` only where the folder still is (a renewal never brings back a folder the run's cleanup removed)."""
    folder = shlex.quote(run_folder(run_dir, run_id))
    first = f"[ -d {folder} ]" if renew else f"mkdir -p {folder}"
    return (f"{first} && echo $(( $(date +%s) + {math.ceil(seconds)} )) > {folder}/{LEASE}.tmp && "
            f"mv {folder}/{LEASE}.tmp {folder}/{LEASE}")  # fmt: skip


def leases_command(run_dir: str, run_ids: Sequence[str]) -> str:
    """Print ``RUN EXPIRY`` per run (EXPIRY empty without a lease), then ``now EPOCH``."""
    reads = [f"printf '%s %s\\n' {shlex.quote(r)} \"$(cat {shlex.quote(run_folder(run_dir, r))}/{LEASE} 2>/dev/null)\""
             for r in run_ids]  # fmt: skip
    return "; ".join([*reads, 'echo "now $(date +%s)"'])


def parse_leases(text: str) -> tuple[dict[str, int | None], int | None]:
    """run → lease expiry (None: no lease), and the machine's clock, from `leases_command`'s output."""
    leases: dict[str, int | None] = {}
    now: int | None = None
    for line in text.splitlines():
        key, _, value = line.strip().partition(" ")
        value = value.strip()
        if key == "now":
            now = int(value) if value.isdigit() else None
        elif key:
            leases[key] = int(value) if value.isdigit() else None
    return leases, now


def job_id_of(stdout: str) -> str | None:
    """The job id ``sbatch --parsable`` printed (``ID`` or ``ID;CLUSTER``)."""
    line = stdout.strip().splitlines()[-1:] if stdout.strip() else []
    found = line[0].split(";", 1)[0].strip() if line else ""
    return found if found.isdigit() else None
