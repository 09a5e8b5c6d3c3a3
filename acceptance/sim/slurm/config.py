"""slurm.conf and gres.conf of the simulated cluster (text only; `daemons` writes and starts them).

What works on a Debian 12 machine with the packages 22.05.8, as root, without systemd or cgroups:
``ProctrackType=proctrack/linuxproc`` and ``TaskPlugin=task/none`` (no cgroup plugin is needed, so no cgroup
mount either), ``SelectType=select/cons_tres`` with ``GresTypes=gpu``, accounting, job completion and
accounting gathering disabled (no slurmdbd: ``sacct`` answers "accounting storage is disabled"), munge for
authentication through a private socket given by ``AuthInfo=socket=``. Every node is ``NodeAddr=127.0.0.1``
with its own ``Port=``; ``slurmd -N NODE`` runs one daemon per node name. A GPU count needs device files:
``Gres=gpu:h200:8`` with ``File=`` naming eight character devices (``mknod DIR/nvidiaN c 1 3`` serves); a
``Count=`` alone drains the node with "gres/gpu count reported lower than configured".
``SlurmdParameters=config_overrides`` lets a node offer more CPUs than the machine has (a task per GPU). PMIx is not
installed (slurmd logs "pmi/pmix: can not load PMIx library" once; harmless): ``srun --mpi=pmi2`` and
``--mpi=none`` work, and Open MPI's ``mpirun`` inside ``salloc -N2`` reaches the allocated nodes through Slurm.
The Debian postinst does not start the system services where policy-rc.d denies it, and nothing here uses
them (no /etc/slurm, no /run/munge). Sixteen nodes register and show IDLE about 1.5 s after the start.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Layout:
    """Where one simulated Slurm keeps its files (all under `root`)."""

    root: Path

    @property
    def etc(self) -> Path:
        return self.root / "etc"

    @property
    def conf(self) -> Path:
        return self.etc / "slurm.conf"

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def spool(self) -> Path:
        return self.root / "spool"

    @property
    def log(self) -> Path:
        return self.root / "log"

    @property
    def run(self) -> Path:
        return self.root / "run"

    @property
    def devices(self) -> Path:
        return self.root / "dev"

    @property
    def munge(self) -> Path:
        return self.root / "munge"

    @property
    def munge_socket(self) -> Path:
        return self.munge / "run" / "munge.socket"

    @property
    def marker(self) -> Path:
        return self.root / "daemons.json"


@dataclass(frozen=True)
class ClusterSpec:
    """The simulated cluster as Slurm sees it."""

    nodes: tuple[str, ...]
    gpus_per_node: int = 8
    gpu_type: str = "h200"
    cpus_per_node: int = 2
    memory_mb: int = 1000
    partition: str = "sim"
    cluster_name: str = "sim-slurm"
    slurmd_timeout_s: int = 10


def node_names(count: int = 16) -> tuple[str, ...]:
    return tuple(f"sim-node-{i:02d}" for i in range(1, count + 1))


def slurm_conf(spec: ClusterSpec, layout: Layout, ctld_port: int, node_ports: dict[str, int]) -> str:
    root = layout.root
    lines = [
        f"ClusterName={spec.cluster_name}",
        "SlurmctldHost=localhost",
        f"SlurmctldPort={ctld_port}",
        f"SlurmdPort={node_ports[spec.nodes[0]]}",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={layout.munge_socket}",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"StateSaveLocation={layout.state}",
        f"SlurmdSpoolDir={layout.spool}/%n",
        f"SlurmctldPidFile={layout.run}/slurmctld.pid",
        f"SlurmdPidFile={layout.run}/slurmd-%n.pid",
        f"SlurmctldLogFile={layout.log}/slurmctld.log",
        f"SlurmdLogFile={layout.log}/slurmd-%n.log",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        # a job is scheduled when it is submitted, not up to 3 s later (the default batch_sched_delay, which
        # rate-limits submit-time scheduling on busy controllers): a small test cluster has no such rush
        "SchedulerParameters=batch_sched_delay=0",
        "SelectTypeParameters=CR_Core",
        "GresTypes=gpu",
        "MpiDefault=none",
        "MailProg=/bin/true",
        "ReturnToService=2",
        f"SlurmdTimeout={spec.slurmd_timeout_s}",
        "SlurmctldTimeout=10",
        "MessageTimeout=5",
        "InactiveLimit=0",
        "KillWait=2",
        "MinJobAge=10",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "SwitchType=switch/none",
        "SlurmdParameters=config_overrides",  # the configured CPUs count, not this machine's (a task per GPU)
        f"# private state of one simulated cluster: {root}",
    ]
    for node in spec.nodes:
        lines.append(
            f"NodeName={node} NodeAddr=127.0.0.1 Port={node_ports[node]} CPUs={spec.cpus_per_node} "
            f"RealMemory={spec.memory_mb} Gres=gpu:{spec.gpu_type}:{spec.gpus_per_node} State=UNKNOWN"
        )
    lines.append(f"PartitionName={spec.partition} Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(line for line in lines if line) + "\n"


def gres_conf(spec: ClusterSpec, layout: Layout) -> str:
    last = spec.gpus_per_node - 1
    return "".join(
        f"NodeName={node} Name=gpu Type={spec.gpu_type} File={layout.devices}/{node}/nvidia[0-{last}]\n"
        for node in spec.nodes
    )
