"""Workload specs → what runs on which host (pure: same input, same commands).

- DCGM: ``dcgmi diag`` on the node. With ``dcgm.host_engine: embedded`` (the criterion's
  ``bash -c "nv-hostengine ... && exec dcgmi ..."``) the host's own engine is used when one
  answers; otherwise one is started for the diagnostic and only that one is stopped after it.
- nccl-tests: ``mpirun`` on the head node over the workload's nodes (`mpi.mpirun_argv`), with
  the hostfile, the launcher's ssh_config and known_hosts in the workload's folder.
- The smoke job, as ``ssh.smoke.launch`` says: wrapped in the same ``mpirun`` (``mpirun``), run
  once on the head node as its own launcher (``head``), or once per node with the torchrun
  variables (``per-node``); its log is the output of the head, or of node rank `log_node_rank`.
- A site check's command on its node (there are no images on bare metal: the command runs on the host).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from acceptance.clusters.base import DcgmWorkload, NcclWorkload, NodeWorkload, SmokeWorkload, Workload
from acceptance.clusters.ssh import mpi
from acceptance.clusters.ssh.remote import exec_line, workload_folder
from acceptance.clusters.ssh.targets import Endpoint
from acceptance.errors import UsageError

DEADLINE_SLACK_S = 60.0
MAIN, PEER = "main", "peer"


@dataclass(frozen=True)
class PlanContext:
    """What every plan of one run needs to know about the cluster."""

    run_id: str
    run_dir: str
    head: str
    endpoints: Mapping[str, Endpoint]
    known_keys: Mapping[str, Sequence[tuple[str, str]]]  # node → [(key type, base64)] the harness trusts
    env: Mapping[str, str] = field(default_factory=dict)
    mpi_major: int = 4
    mpirun: str = "mpirun"
    mpirun_args: tuple[str, ...] = ()
    launcher_identity: str | None = None
    accept_new: bool = False
    connect_timeout_s: float = 15.0
    smoke_launch: str = "mpirun"
    master_port: int = 29500
    log_node_rank: int = 0


@dataclass(frozen=True)
class HostCommand:
    """One command of a workload on one host; `role` MAIN is the one whose output is the workload's."""

    node: str
    role: str
    folder: str
    script: str
    env: Mapping[str, str]
    files: Mapping[str, str]
    deadline_s: float
    mpi: bool = False  # the script is Open MPI's mpirun (its failures are said in its own words)

    def to_json(self) -> dict[str, Any]:
        return {
            "node": self.node, "role": self.role, "folder": self.folder, "script": self.script,
            "env": dict(self.env), "files": dict(self.files), "deadline_s": self.deadline_s, "mpi": self.mpi,
        }  # fmt: skip

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> HostCommand:
        return cls(doc["node"], doc["role"], doc["folder"], doc["script"], dict(doc["env"]), dict(doc["files"]),
                   float(doc["deadline_s"]), bool(doc.get("mpi", False)))  # fmt: skip


def dcgm_script(argv: Sequence[str], engine_pidfile: str = "nv-hostengine.pid") -> str:
    """``dcgmi diag`` with the criterion's embedded-engine wrapper turned into a host-aware guard."""
    dcgmi = list(argv)
    embedded = len(argv) == 3 and argv[0] in ("bash", "sh") and argv[1] == "-c" and "nv-hostengine" in argv[2]
    if embedded:
        _, _, tail = argv[2].partition("exec ")
        dcgmi = shlex.split(tail)
    if not embedded:
        return exec_line(dcgmi)
    return "\n".join([
        "# the host's DCGM host engine when one answers; else one started for this diagnostic, stopped after it",
        "started=",
        "if ! dcgmi discovery -l >/dev/null 2>&1; then",
        f"  nv-hostengine --pid \"$PWD/{engine_pidfile}\" >&2 && started=1",
        "fi",
        shlex.join(dcgmi),
        "rc=$?",
        f'if [ -n "$started" ] && [ -s {engine_pidfile} ]; then kill "$(cat {engine_pidfile})" 2>/dev/null; fi',
        "exit $rc",
    ]) + "\n"  # fmt: skip


def _mpi_command(ctx: PlanContext, name: str, nodes: Sequence[str], slots: int, argv: Sequence[str],
                 env: Mapping[str, str], deadline_s: float) -> HostCommand:  # fmt: skip
    folder = workload_folder(ctx.run_dir, ctx.run_id, name)
    hosts = [mpi.LauncherHost(n, ctx.endpoints[n].address, ctx.endpoints[n].port, ctx.endpoints[n].user)
             for n in nodes]  # fmt: skip
    keys = [(ctx.endpoints[n].address, ctx.endpoints[n].port, kind, blob)
            for n in nodes for kind, blob in ctx.known_keys.get(n, ())]  # fmt: skip
    files = {
        "hostfile": mpi.hostfile(nodes, slots),
        "ssh_config": mpi.ssh_config(hosts, f"{folder}/known_hosts", accept_new=ctx.accept_new,
                                     identity_file=ctx.launcher_identity, connect_timeout_s=ctx.connect_timeout_s),
        "known_hosts": mpi.known_hosts(keys),
    }  # fmt: skip
    command = mpi.mpirun_argv(
        mpirun=ctx.mpirun, major=ctx.mpi_major, nprocs=len(nodes) * slots, hostfile_path=f"{folder}/hostfile",
        ssh_config_path=f"{folder}/ssh_config", run_id=ctx.run_id, workload=name, env_names=mpi.env_names(env),
        extra_args=ctx.mpirun_args, argv=argv, session_dir=folder,
    )  # fmt: skip
    return HostCommand(
        ctx.head, MAIN, folder, exec_line(command), dict(env), files, deadline_s + DEADLINE_SLACK_S, mpi=True
    )


def _plain_env(w: SmokeWorkload) -> dict[str, str]:
    """The smoke run's environment as text; a reference to a Kubernetes secret cannot be honoured over SSH."""
    refs = sorted(name for name, value in w.env.items() if not isinstance(value, str))
    if refs:
        raise UsageError(f"smoke env {', '.join(refs)}: a secret reference (valueFrom) needs a Kubernetes cluster; "
                         "over SSH set the variable in the hosts' environment or in the profile's ssh.env")  # fmt: skip
    return {name: str(value) for name, value in w.env.items()}


def _smoke(ctx: PlanContext, w: SmokeWorkload) -> list[HostCommand]:
    env = {**ctx.env, **_plain_env(w)}
    folder = workload_folder(ctx.run_dir, ctx.run_id, w.name)
    deadline = w.deadline_s + DEADLINE_SLACK_S
    if ctx.smoke_launch == "per-node":
        master = ctx.endpoints[w.nodes[0]].address
        out = []
        for rank, node in enumerate(w.nodes):  # a folder per node: hosts may share a file system
            folder = workload_folder(ctx.run_dir, ctx.run_id, f"{w.name}.{node}")
            torch = {"NODE_RANK": str(rank), "NNODES": str(len(w.nodes)), "MASTER_ADDR": master,
                     "MASTER_PORT": str(ctx.master_port), "NPROC_PER_NODE": str(w.gpus_per_node),
                     "WORLD_SIZE": str(len(w.nodes) * w.gpus_per_node)}  # fmt: skip
            role = MAIN if rank == min(ctx.log_node_rank, len(w.nodes) - 1) else PEER
            out.append(HostCommand(node, role, folder, exec_line(w.argv), {**env, **torch}, {}, deadline))
        return out
    if ctx.smoke_launch == "head":
        files = {"hostfile": mpi.hostfile(w.nodes, w.gpus_per_node)}
        env = {**env, "RECOVERY_ACCEPTANCE_HOSTFILE": f"{folder}/hostfile"}
        return [HostCommand(ctx.head, MAIN, folder, exec_line(w.argv), env, files, deadline)]
    if len(w.nodes) == 1:
        return [HostCommand(w.nodes[0], MAIN, folder, exec_line(w.argv), env, {}, deadline)]
    return [_mpi_command(ctx, w.name, w.nodes, w.gpus_per_node, w.argv, env, w.deadline_s)]


def plan(ctx: PlanContext, workload: Workload) -> list[HostCommand]:
    """The host commands of `workload`, the MAIN one first."""
    if isinstance(workload, NcclWorkload):
        env = {**ctx.env, **workload.env}
        return [_mpi_command(ctx, workload.name, workload.nodes, workload.gpus_per_node, workload.argv, env,
                             workload.deadline_s)]  # fmt: skip
    if isinstance(workload, DcgmWorkload):
        folder = workload_folder(ctx.run_dir, ctx.run_id, workload.name)
        script = dcgm_script(workload.argv)
        return [HostCommand(workload.node, MAIN, folder, script, {}, {}, workload.deadline_s + DEADLINE_SLACK_S)]
    if isinstance(workload, NodeWorkload):
        folder = workload_folder(ctx.run_dir, ctx.run_id, workload.name)
        return [HostCommand(workload.node, MAIN, folder, exec_line(workload.argv), dict(ctx.env), {},
                            workload.deadline_s + DEADLINE_SLACK_S)]  # fmt: skip
    commands = _smoke(ctx, workload)
    return sorted(commands, key=lambda c: c.role != MAIN)
